"""The result types (advisor.types: Evidence ... Diagnosis) are plain dataclasses, built without
validation: every value must be made of its declared type where it is built. This walks the
diagnoses of real inputs and checks each field against its annotation, strictly (a float field
holds a float, not an int: the JSON would say `2` for `2.0`), and the JSON writer against the
one the contract's output was first written with (pydantic's, serde_json's number layout)."""

from __future__ import annotations

import json
import math
import struct
import types as pytypes
import typing
from dataclasses import fields, is_dataclass, replace
from enum import Enum
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

import pytest

from advisor import types
from advisor.api import diagnose
from advisor.integrations.follow import Sidecar
from advisor.online import Advisor
from advisor.types import Change, Diagnosis, Evidence, Finding, Severity, dumps

ROOT = Path(__file__).resolve().parent.parent
CORPUS = sorted(d for d in (ROOT / "sample_metrics" / "corpus").iterdir() if d.is_dir())


def _problems(value: Any, hint: Any, where: str) -> list[str]:
    if hint is Any:
        try:
            dumps(value)
        except TypeError as err:
            return [f"{where}: {err}"]
        return []
    origin, args = get_origin(hint), get_args(hint)
    if origin in (typing.Union, pytypes.UnionType):
        found = [_problems(value, a, where) for a in args]
        return [] if any(not p for p in found) else [f"{where}: {value!r} is none of {hint}"]
    if origin is Literal:
        return [] if value in args else [f"{where}: {value!r} not in {args}"]
    if origin is list:
        if not isinstance(value, list):
            return [f"{where}: {type(value).__name__}, not a list"]
        return [p for i, v in enumerate(value) for p in _problems(v, args[0], f"{where}[{i}]")]
    if origin is dict:
        if not isinstance(value, dict):
            return [f"{where}: {type(value).__name__}, not a dict"]
        return [
            p
            for k, v in value.items()
            for p in _problems(k, args[0], f"{where} key") + _problems(v, args[1], f"{where}.{k}")
        ]
    if origin is tuple:
        if not isinstance(value, tuple) or len(value) != len(args):
            return [f"{where}: {value!r} is not a {len(args)}-tuple"]
        return [p for v, a in zip(value, args, strict=True) for p in _problems(v, a, where)]
    if hint is type(None):
        return [] if value is None else [f"{where}: {value!r}, not None"]
    if hint is float:
        return [] if type(value) is float else [f"{where}: {type(value).__name__}, not float"]
    if hint is int:
        return [] if type(value) is int else [f"{where}: {type(value).__name__}, not int"]
    if hint in (str, bool):
        return [] if type(value) is hint else [f"{where}: {type(value).__name__}, not {hint}"]
    if isinstance(hint, type) and issubclass(hint, Enum):
        return [] if isinstance(value, hint) else [f"{where}: {value!r}, not a {hint.__name__}"]
    if isinstance(hint, type) and is_dataclass(hint):
        if type(value) is not hint:
            return [f"{where}: {type(value).__name__}, not {hint.__name__}"]
        return _check(value, where)
    raise AssertionError(f"{where}: no check for {hint}")


def _check(obj: Any, where: str = "") -> list[str]:
    hints = typing.get_type_hints(type(obj), vars(types))
    return [
        p
        for f in fields(obj)
        for p in _problems(getattr(obj, f.name), hints[f.name], f"{where}.{f.name}")
    ]


def test_the_checker_sees_a_wrong_type() -> None:
    ok = Finding(id="P1", name="n", severity=Severity.error, strength=1.0)
    assert _check(ok) == []
    assert _check(replace(ok, strength=1))  # an int where a float is declared
    assert _check(replace(ok, evidence=[Evidence(metric="m", detector="d", window=(1, 2.0),
                                                  summary="s")]))  # fmt: skip
    assert _check(replace(ok, severity="error"))  # a string, not the enum


@pytest.mark.parametrize("run", CORPUS[::3], ids=lambda d: d.name)
def test_every_field_of_a_diagnosis_has_its_declared_type(run: Path) -> None:
    d = diagnose(run, run / "job.yaml")
    assert _check(d, "Diagnosis") == []
    assert json.loads(d.to_json())["schema_version"] == 1


def test_the_online_diagnosis_has_declared_types_too() -> None:
    run = ROOT / "sample_metrics" / "corpus" / "p3-step-verl-console-s0001"
    log = run / "train.log"
    adv = Advisor.from_config(run / "job.yaml", source=str(log))
    assert Sidecar(log, adv, idle=0.0, poll=0.01).run() in {"idle", "ending"}
    d = adv.diagnosis()
    assert d.findings and _check(d, "Diagnosis") == []


def _floats(n: int) -> list[float]:
    import random

    rnd = random.Random(7)
    out = [1e-5, 1.5e-5, 9.999e-5, 1e-4, -2e-5, 1e-7, 1e15, 1e16, 1e17, 1.2345678901234568e17,
           5e-324, -0.0, 0.0, 1e300, 0.1, 2.5]  # fmt: skip
    while len(out) < n:
        x = struct.unpack("d", struct.pack("Q", rnd.getrandbits(64)))[0]
        if math.isfinite(x):
            out.append(x)
        out.append(round(rnd.uniform(-1, 1) * 10 ** rnd.randint(-9, 20), rnd.randint(0, 12)))
    return out


def test_numbers_are_written_as_serde_json_writes_them() -> None:
    pydantic_core = pytest.importorskip("pydantic_core")
    for x in _floats(20_000):
        assert dumps(x) == pydantic_core.to_json(x).decode(), x
    data = {"a": [1, {}, [], True, None, "é\x01\u2028\x7f"], "b": {"c": float("nan")}}
    assert dumps(data) == pydantic_core.to_json(data, indent=2, inf_nan_mode="null").decode()
    assert dumps(data, None) == pydantic_core.to_json(data, inf_nan_mode="null").decode()


def test_the_json_says_from_and_leaves_the_series_out() -> None:
    d = Diagnosis(patch=None, series={"reward_mean": ([1], [0.5])})
    data = json.loads(d.to_json())
    assert "series" not in data and data["tool"] == {"name": "rl-advisor", "version": ""}
    c = Change(param="lr", from_=1e-5, to=2e-6, op="multiply", factor=2.0)
    assert list(c.to_dict())[:3] == ["param", "from", "to"]
    assert c.to_json(None).startswith('{"param":"lr","from":0.00001,"to":2e-6,')
    with pytest.raises(TypeError, match="cannot write a object"):
        dumps({"x": object()})


def test_results_compare_by_value() -> None:
    a = Finding(id="P1", name="n", severity=Severity.error, evidence=[])
    assert a == replace(a) and a != replace(a, priority=1) and a != Diagnosis()
    assert repr(a).startswith("Finding(id='P1', name='n', severity=<Severity.error")
    with pytest.raises(TypeError):
        hash(a)  # mutable: as a dataclass with eq
