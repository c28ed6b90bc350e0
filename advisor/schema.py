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
"""

from __future__ import annotations

import copy
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

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


class Plain:
    """Base of a schema's dataclasses: what their users call beside the fields."""

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


_ADAPTERS: dict[type[Any], Any] = {}


def adapter(cls: type[T]) -> TypeAdapter[T]:
    """pydantic's validator of the schema class `cls` (built once per process)."""
    found: TypeAdapter[T] | None = _ADAPTERS.get(cls)
    if found is None:
        from pydantic import Field, TypeAdapter

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
