"""The rulebooks' schemas: plain dataclasses that pydantic checks only when a book is read.

Each rulebook's schema (`engine/`'s symptom rules, `book/paramspec.py`, `static.py`,
`dialect.py`) is a set of stdlib dataclasses, the only copy of the schema. A rulebook read from
`resources.load_validated`'s cache is these plain objects, so a warm start imports no
pydantic; on a cache miss (a new or edited book) pydantic validates the YAML data into them
(`validate`) and exports their JSON schema (`json_schema`).

How the schema is spelled, so that building a class needs no pydantic:
- `__pydantic_config__ = STRICT` on each class: unknown keys refused (a dict, as pydantic's
  `ConfigDict` is one).
- A constraint or a description is `Annotated[T, Field(...)]` in the annotation, the default
  beside it. The modules use `from __future__ import annotations`, so an annotation is a
  string until pydantic reads it. The schema module imports `Field` for type checkers only;
  `adapter` binds the name in that module when it builds a validator (pydantic resolves the
  strings in the class's module). One spelling for every constraint, alias and description,
  the same `Field` as a pydantic model's.
- A check over a whole object (a model validator) is the class's `__post_init__`, which
  pydantic runs once the object is built; a check of one field is `After(function)` in that
  field's `Annotated` (pydantic's AfterValidator). A ValueError from either is a
  ValidationError at the object's or the field's place, "Value error, ..." as from a model's
  validator.
- A class is `@declared(...)`, a `dataclasses.dataclass(kw_only=True, ...)` made when the class
  is first used as one (see `declared`): a warm start reads the rulebooks' objects from the
  cache and only their attributes, so it builds none of their ~40 classes (~15 ms a start).
"""

from __future__ import annotations

import copy
import dataclasses
import sys
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, dataclass_transform

from advisor.types import InputError

if TYPE_CHECKING:
    from pydantic import GetCoreSchemaHandler, TypeAdapter, ValidationError

T = TypeVar("T")
P = TypeVar("P", bound="Plain")

# unknown keys refused; a field with an alias (`not`) accepted by its Python name too
STRICT: dict[str, Any] = {"extra": "forbid", "populate_by_name": True}

# pydantic's errors for a dataclass's arguments, and the same errors of a model's fields: a
# refusal reads as it did when the schema was pydantic models ("Extra inputs are not permitted")
_AS_MODEL = {
    "missing_argument": "missing",
    "unexpected_keyword_argument": "extra_forbidden",
    "dataclass_type": "model_type",
}


class _Fields:
    """`__dataclass_fields__` of a declared class not built yet (as `dataclasses.fields`,
    `is_dataclass`, `replace`, `asdict` and a subclass's dataclass look it up): builds it."""

    def __get__(self, obj: object, cls: type) -> Any:
        if cls in _PENDING:
            _build(cls)
            return vars(cls)["__dataclass_fields__"]
        raise AttributeError("__dataclass_fields__")  # not a dataclass (Plain, a base)


class Plain:
    """Base of a schema's dataclasses: what their users call beside the fields."""

    if not TYPE_CHECKING:  # (a built dataclass's own dict holds its fields: found first)
        __dataclass_fields__ = _Fields()

    def model_copy(self: P, *, update: Mapping[str, Any] | None = None) -> P:
        """A shallow copy with `update`'s fields replaced, unchecked (as a pydantic model's
        `model_copy`); attributes that are not fields (engine's `_condition`) are kept."""
        new = copy.copy(self)
        if update:
            new.__dict__.update(update)
        return new


class After:
    """`Annotated` metadata: `function(value) -> value` run after the field's own validation
    (pydantic's AfterValidator, declared without importing pydantic)."""

    def __init__(self, function: Callable[[Any], Any]) -> None:
        self.function = function

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> Any:
        function = {"type": "no-info", "function": self.function}
        return {"type": "function-after", "function": function, "schema": handler(source)}


# declared classes not built yet -> (frozen, the methods standing in for dataclass's until then)
_PENDING: dict[type[Any], tuple[bool, tuple[str, ...]]] = {}
_BUILDING = threading.RLock()
_METHODS = ("__init__", "__repr__", "__eq__", "__hash__")
_FROZEN_METHODS = ("__setattr__", "__delattr__")


@dataclass_transform(kw_only_default=True, field_specifiers=(dataclasses.field,))
def declared(*, frozen: bool = False) -> Callable[[type[T]], type[T]]:
    """`dataclasses.dataclass(kw_only=True, frozen=frozen)` of a schema class (a `Plain`), made
    the first time the class is used as one instead of when its module is imported.

    Building a dataclass executes its generated methods' source (~0.35 ms a class). A rulebook
    read from the cache (resources.load_validated) is unpickled, which sets each object's
    attributes without calling any method of its class, and a diagnosis then reads those
    attributes: no class is built. Anything else builds the class first, so it behaves as
    the dataclass: making an object (`__init__`), `repr`, `==`, `hash`, a frozen object's
    `setattr`/`delattr`, `dataclasses.fields` / `is_dataclass` / `replace` / `asdict`, a
    subclass's dataclass and pydantic's validator (`adapter`, which builds every pending class).
    """

    def declare(cls: type[T]) -> type[T]:
        names = _METHODS + (_FROZEN_METHODS if frozen else ())
        stand_ins = tuple(n for n in names if n not in vars(cls))  # the class's own stay
        for name in stand_ins:
            setattr(cls, name, _stand_in(cls, name))
        _PENDING[cls] = (frozen, stand_ins)
        return cls

    return declare


def _stand_in(cls: type[Any], name: str) -> Callable[..., Any]:
    """`cls.name` until the class is built: builds it, then calls the dataclass's own."""
    if name == "__hash__":  # None once built when the dataclass is not hashable: hash() says so

        def hash_(self: Any) -> int:
            _build(cls)
            return hash(self)

        return hash_

    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        _build(cls)
        return vars(cls)[name](self, *args, **kwargs)

    method.__name__ = name
    return method


def _build(cls: type[Any]) -> None:
    """The dataclass `declared` stood in for, made now (once, whichever thread asks first)."""
    with _BUILDING:
        pending = _PENDING.pop(cls, None)
        if pending is None:
            return
        frozen, stand_ins = pending
        for name in stand_ins:
            delattr(cls, name)
        dataclasses.dataclass(cls, kw_only=True, frozen=frozen)


def build_all() -> None:
    """Every declared class built (before pydantic reads their fields and annotations)."""
    for cls in list(_PENDING):
        _build(cls)


_ADAPTERS: dict[type[Any], Any] = {}


def adapter(cls: type[T]) -> TypeAdapter[T]:
    """pydantic's validator of the schema class `cls` (built once per process)."""
    found: TypeAdapter[T] | None = _ADAPTERS.get(cls)
    if found is None:
        from pydantic import Field, TypeAdapter

        build_all()
        vars(sys.modules[cls.__module__]).setdefault("Field", Field)  # the annotations' `Field`
        found = _ADAPTERS[cls] = TypeAdapter(cls)
    return found


def validate(cls: type[T], data: Any) -> T:
    """`data` validated into `cls`; pydantic's ValidationError when it does not fit, its
    errors those a pydantic model of the same fields reports."""
    from pydantic import ValidationError

    try:
        return adapter(cls).validate_python(data)
    except ValidationError as err:
        if not any(e["type"] in _AS_MODEL for e in err.errors()):
            raise
        errors: list[Any] = []
        for e in err.errors():
            kind = _AS_MODEL.get(e["type"], e["type"])
            said = {"type": kind, "loc": e["loc"], "input": e["input"]}
            errors.append({**said, "ctx": e["ctx"]} if "ctx" in e else said)
        raise ValidationError.from_exception_data(err.title, errors) from None


def validate_file(cls: type[T], data: Any, path: Path) -> T:
    """`validate` of a rulebook file's data; a misfit is one InputError line naming the file
    and the place (`FILE: rules.0.check.kind: ...`), as a bad input is said everywhere."""
    from pydantic import ValidationError

    try:
        return validate(cls, data)
    except ValidationError as err:
        raise InputError(f"{path}: {first_error(err)}") from None


def json_schema(cls: type[Any], *, by_alias: bool = True) -> dict[str, Any]:
    """The JSON schema of `cls`, as a pydantic model of the same fields exports it."""
    return adapter(cls).json_schema(by_alias=by_alias)


def first_error(err: ValidationError) -> str:
    """The first problem of `err` as `place: message` (`rules.0.when.Leaf.bogus: ...`)."""
    e = err.errors()[0]
    return f"{'.'.join(str(x) for x in e['loc'])}: {e['msg']}"
