"""The job config declares list/dict defaults as `= []` / `= {}` (cheaper to build than
`default_factory=list`): pydantic must give every instance its own copy, on every way an
instance is made."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from pydantic import BaseModel

from advisor import config

MODELS = [
    m
    for mod in (config,)
    for m in vars(mod).values()
    if isinstance(m, type) and issubclass(m, BaseModel) and m.__module__ == mod.__name__
]


def _required(model: type[BaseModel]) -> dict[str, Any]:
    """The least a model needs, by field name (the required fields of the job config)."""
    values = {"metric": "m", "detector": "d", "window": (1, 2), "summary": "s", "param": "p",
              "advice": "a", "id": "X1", "name": "n", "severity": "info", "message": "m",
              "source": "s", "format": "f", "steps": 1, "first_step": 1, "last_step": 1,
              "metrics": []}  # fmt: skip
    return {
        name: values[name]
        for name, f in model.model_fields.items()
        if f.is_required() and not name.startswith("_")
    }


def _mutable_defaults(model: type[BaseModel]) -> list[str]:
    return [
        name
        for name, f in model.model_fields.items()
        if isinstance(f.get_default(call_default_factory=True), list | dict)
    ]


def test_the_job_config_has_mutable_defaults() -> None:
    """Guard: the copies below are checked on real fields, not on none."""
    assert sum(len(_mutable_defaults(m)) for m in MODELS) >= 3


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
@pytest.mark.parametrize("make", ["validate", "construct", "copy"])
def test_each_instance_owns_its_defaults(model: type[BaseModel], make: str) -> None:
    fields = _mutable_defaults(model)
    if not fields:
        pytest.skip("no list or dict default")
    base = model.model_validate(_required(model))
    if make == "validate":
        a, b = model.model_validate(_required(model)), model.model_validate(_required(model))
    elif make == "construct":
        a, b = model.model_construct(**_required(model)), model.model_construct(**_required(model))
    else:
        a, b = base.model_copy(deep=True), base.model_copy(deep=True)
    for name in fields:
        fresh = copy.deepcopy(model.model_fields[name].get_default(call_default_factory=True))
        got = getattr(a, name)
        if isinstance(got, list):
            got.append("x")
        else:
            got["x"] = 1
        assert getattr(b, name) == fresh, f"{model.__name__}.{name} shared between instances"
        assert getattr(base, name) == fresh
        assert model.model_fields[name].get_default(call_default_factory=True) == fresh
