"""The dialect table (rulebook/dialects.yaml): how each guide hyperparameter is named and
valued in each framework, its schema and its loader. advisor/dialect.py speaks with it.
"""

from __future__ import annotations

import dataclasses
from functools import cache
from pathlib import Path
from typing import Any, Literal

from advisor import schema
from advisor.resources import load_validated, read_yaml_data, rulebook_dir
from advisor.schema import STRICT, Plain, declared

Framework = Literal["platform", "trl", "verl", "openrlhf"]
FRAMEWORKS: tuple[str, ...] = ("platform", "trl", "verl", "openrlhf")


class _Strict(Plain):
    __pydantic_config__ = STRICT


@declared(frozen=True)
class Case(_Strict):
    when: dict[str, Any]
    key: str
    also: dict[str, Any] | None = None


@declared(frozen=True)
class ValueCase(_Strict):
    """A choice's settings for runs that show `when` (a verl run with a critic keeps its
    estimator: of DAPO only Clip-Higher applies to it)."""

    when: dict[str, Any]
    values: dict[str, dict[str, Any]]


@declared(frozen=True)
class Hold(_Strict):
    """A framework setting scaled with a change of the key by the same factor, so that a
    quantity the guide keeps apart stays what it was (TRL counts prompts per step through
    num_generations: more samples a prompt would mean fewer prompts)."""

    key: str
    keeps: str


@declared(frozen=True)
class Name(_Strict):
    """One guide hyperparameter in one framework."""

    key: str | None = None
    cases: list[Case] = dataclasses.field(default_factory=list)
    also: dict[str, Any] = dataclasses.field(default_factory=dict)
    minus: str | None = None
    divide_by: str | None = None
    scale: bool = False
    values: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    value_cases: list[ValueCase] = dataclasses.field(default_factory=list)
    none: str | None = None
    note: str | None = None
    since_absent: str | None = None  # the key is gone from newer releases: why, if so
    holds: Hold | None = None


@declared(frozen=True)
class OnPolicy(_Strict):
    """Settings that act only on updates made off-policy: while each generation batch is used
    up within one optimizer step the importance ratio is exactly 1 and they change nothing."""

    keys: list[str]
    # the batch is used up within one step when `per_step` is a multiple of `per_batch`
    # (each a product of settings, with their defaults when the run does not name them)
    per_step: list[str]
    per_batch: list[str]
    defaults: dict[str, int]
    why: str
    assumed: str  # said after `why` when the run names none of `per_batch`


@declared(frozen=True)
class FrameworkInfo(_Strict):
    title: str
    file: str
    package: str | None = None
    same_as: str | None = None
    defaults: dict[str, Any] = dataclasses.field(default_factory=dict)
    off_policy_only: OnPolicy | None = None


@declared(frozen=True)
class DialectBook(_Strict):
    version: int
    frameworks: dict[str, FrameworkInfo]
    names: dict[str, dict[str, Name]]
    # settings of the frameworks that are no guide hyperparameter (the sampling temperature):
    # a rule may advise them for a run of a framework that has them (rulebook `first_when`)
    sampling: dict[str, dict[str, Name]] = dataclasses.field(default_factory=dict)


@cache
def dialects() -> DialectBook:
    """The name table, validated against its schema (cached)."""

    def build(path: Path) -> DialectBook:
        return schema.validate_file(DialectBook, read_yaml_data(path), path)

    return load_validated(rulebook_dir() / "dialects.yaml", build, __name__)
