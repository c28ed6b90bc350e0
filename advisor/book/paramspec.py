"""The detectors' declared parameters (rulebook/detectors.yaml), against which the symptom
rulebook's loader checks every rule leaf (advisor/book/symptoms.py).

A leaf's `params` (and `keep`) are the thresholds a practitioner tunes; the detector reads them
by name. Declaring each name with its meaning, unit, default and valid values lets the loader
refuse a misspelt key (which the detector would silently ignore, dropping a guard) or a value
out of range, and lets `rl-advisor rules ID` say every threshold in words.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

from advisor import schema
from advisor.resources import detectors_yaml, read_rulebook_data
from advisor.schema import STRICT, Plain
from advisor.types import InputError, Scalar

if TYPE_CHECKING:
    from pydantic import Field

Companion = Literal["per", "rounds"]


class _Strict(Plain):
    __pydantic_config__ = STRICT


@dataclass(frozen=True, kw_only=True)
class ParamSpec(_Strict):
    """One parameter of one detector."""

    meaning: Annotated[str, Field(min_length=1, description="what the value sets, in words")]
    unit: Annotated[str, Field(description="the value's unit (blocks, warm-up sigmas, ...)")] = ""
    kind: Literal["number", "integer", "flag", "choice"] = "number"
    default: Annotated[
        Scalar | None,
        Field(description="what the detector uses when a leaf leaves it out (null: test off)"),
    ] = None
    required: Annotated[bool, Field(description="a leaf must set it")] = False
    range: Annotated[
        tuple[float, float] | None, Field(description="[low, high], inclusive")
    ] = None
    choices: Annotated[
        list[str], Field(description="the words it accepts (beside numbers in range)")
    ] = dataclasses.field(default_factory=list)

    def __post_init__(self) -> None:  # run by pydantic after validation (advisor/schema.py)
        if self.kind == "choice" and not self.choices:
            raise ValueError("a choice needs its choices")
        if self.range is not None and self.range[0] > self.range[1]:
            raise ValueError(f"range {list(self.range)}: low above high")

    def problem(self, value: Scalar) -> str | None:
        """Why `value` is not valid for this parameter, or None."""
        if isinstance(value, str):
            if value in self.choices:
                return None
            if self.choices:
                return f"expected one of {self.choices}, found {value!r}"
            return f"expected a {self.kind}, found {value!r}"
        if self.kind == "flag":
            return None if isinstance(value, bool) else f"expected true or false, found {value!r}"
        if isinstance(value, bool) or self.kind == "choice":
            return f"expected {self._expected()}, found {value!r}"
        if self.kind == "integer" and not float(value).is_integer():
            return f"expected an integer, found {value!r}"
        if self.range is not None and not (
            math.isfinite(value) and self.range[0] <= value <= self.range[1]
        ):
            return f"expected {self._expected()}, found {value!r}"
        return None

    def _expected(self) -> str:
        parts = []
        if self.range is not None:
            parts.append(f"a {self.kind} in [{self.range[0]:g}, {self.range[1]:g}]")
        elif self.kind in ("number", "integer"):
            parts.append(f"a {self.kind}")
        if self.choices:
            parts.append(f"one of {self.choices}")
        return " or ".join(parts)


@dataclass(frozen=True, kw_only=True)
class DetectorSpec(_Strict):
    summary: Annotated[str, Field(min_length=1, description="what the detector detects")]
    shared: Annotated[
        dict[str, Scalar | None], Field(description="shared parameters it reads -> its default")
    ] = dataclasses.field(default_factory=dict)
    companions: list[Companion] = dataclasses.field(default_factory=list)
    params: dict[str, ParamSpec] = dataclasses.field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class DetectorBook(_Strict):
    version: int
    shared: dict[str, ParamSpec]
    companions: dict[str, str]
    detectors: dict[str, DetectorSpec]

    def __post_init__(self) -> None:  # run by pydantic after validation (advisor/schema.py)
        extra = set(self.companions) - {"per", "rounds"}
        if extra:
            raise ValueError(f"companions: {sorted(extra)}; the engine passes only per, rounds")
        for name, det in self.detectors.items():
            unknown = set(det.shared) - set(self.shared)
            if unknown:
                raise ValueError(f"detector {name}: undeclared shared params {sorted(unknown)}")
            both = set(det.shared) & set(det.params)
            if both:
                raise ValueError(f"detector {name}: {sorted(both)} both shared and its own")

    def params_of(self, detector: str) -> dict[str, ParamSpec]:
        """Every parameter `detector` reads, shared ones with its own default."""
        det = self.detectors[detector]
        out = {
            key: self.shared[key].model_copy(update={"default": default})
            for key, default in det.shared.items()
        }
        out.update(det.params)
        return out

    def keys_of(self, detector: str) -> set[str]:
        """The keys a leaf of `detector` may set in `params` and `keep`."""
        det = self.detectors[detector]
        return set(det.shared) | set(det.params)


def spec_path() -> Path:
    return detectors_yaml()


@cache
def detector_book(path: Path | None = None) -> DetectorBook:
    """rulebook/detectors.yaml, schema-checked (cached per path)."""

    p = path or spec_path()
    data = read_rulebook_data(p, "detector parameters")
    return schema.validate_file(DetectorBook, data, p)


def meanings(detector: str) -> dict[str, tuple[str, str]]:
    """Each key a leaf of `detector` may set -> (its meaning in words, its unit); {} when the
    detector or the spec is not available (`rules` then shows the values alone)."""
    try:
        spec = detector_book()
    except InputError:
        return {}
    if detector not in spec.detectors:
        return {}
    out = {key: (p.meaning, p.unit) for key, p in spec.params_of(detector).items()}
    out.update({c: (spec.companions[c], "") for c in spec.detectors[detector].companions})
    return out


def summary(detector: str) -> str:
    """One line of what `detector` detects ('' when it is not declared)."""
    try:
        det = detector_book().detectors.get(detector)
    except InputError:
        return ""
    return det.summary if det is not None else ""


def write_schema(dest: Path | None = None) -> Path:
    """Write detectors.yaml's JSON schema (`python -m advisor.book.paramspec` regenerates it)."""

    path = dest or spec_path().parent / "schema_detectors.json"
    book_schema = schema.json_schema(DetectorBook)
    path.write_text(json.dumps(book_schema, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return path


if __name__ == "__main__":
    print(write_schema())
