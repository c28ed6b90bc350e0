"""Shared helpers of the config tests: build a job file from a base plus a patch."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.representer import SafeRepresenter

from advisor.config import yaml11_number

HERE = Path(__file__).resolve().parent
BASES = HERE / "bases"
CASES = HERE / "cases"
JOBS = HERE.parents[1] / "sample_metrics" / "jobs"


def read_yaml(path: Path) -> Any:
    return YAML(typ="safe", pure=True).load(path.read_text(encoding="utf-8"))


def merge(base: Any, patch: Any) -> Any:
    """Deep merge: mappings recursively, lists of mappings by index; None deletes a key."""
    if isinstance(base, dict) and isinstance(patch, dict):
        out = copy.deepcopy(base)
        for key, value in patch.items():
            if value is None:
                out.pop(key, None)
            else:
                out[key] = merge(out.get(key), value)
        return out
    if isinstance(base, list) and isinstance(patch, list):
        out = copy.deepcopy(base)
        for i, value in enumerate(patch):
            if i < len(out):
                out[i] = merge(out[i], value)
            else:
                out.append(copy.deepcopy(value))
        return out
    return copy.deepcopy(patch)


class _Yaml11Floats(SafeRepresenter):
    pass


_Yaml11Floats.add_representer(
    float, lambda rep, v: rep.represent_scalar("tag:yaml.org,2002:float", yaml11_number(v))
)


def write_yaml(data: Any, path: Path) -> Path:
    """`data` as YAML, its floats as the platform SDK's YAML 1.1 loader reads them (1.0e-06):
    C009 judges the numbers users write, not this writer's."""
    yaml = YAML(typ="safe", pure=True)
    yaml.Representer = _Yaml11Floats
    with path.open("w", encoding="utf-8") as fh:
        yaml.dump(data, fh)
    return path


def load_cases() -> list[tuple[str, dict[str, Any]]]:
    cases = []
    for file in sorted(CASES.glob("*.yaml")):
        for name, case in read_yaml(file).items():
            cases.append((f"{file.stem}:{name}", case))
    return cases
