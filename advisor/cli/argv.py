"""The plain calls of `rl-advisor diagnose`, parsed without the CLI framework.

The framework (typer over click) costs ~50 ms a start, a quarter of the reading floor of a
2,000-step run, and gives a one-command call nothing it needs: `parse_argv` reads the command's
usual spellings itself (`--opt VALUE`, `--opt=VALUE`, `-c VALUE`, `-cVALUE`) and answers None
for anything else (`--help`, an unknown or repeated option, a value that is not one of the
choices, a missing argument ...), which the caller hands to the framework: every help text and
usage error stays the framework's own. It imports nothing but the command's enums: the call is
parsed, and the run's read started, before the command's own modules are imported.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from advisor.cli import FailOn, ReportFormat

# option -> (parameter, kind): "path", "str", "int", "list", "flag" or an enum class
_OPTIONS: dict[str, tuple[str, Any]] = {
    "--config": ("config", "path"),
    "-c": ("config", "path"),
    "--set": ("sets", "list"),
    "--format": ("format", ReportFormat),
    "-f": ("format", ReportFormat),
    "--output": ("output", "path"),
    "-o": ("output", "path"),
    "--patched-config": ("patched_config", "path"),
    "--previous": ("previous", "paths"),
    "--fail-on": ("fail_on", FailOn),
    "--training-samples": ("training_samples", "int"),
    "--ignore": ("ignore", "list"),
    "--plots-dir": ("plots_dir", "path"),
    "--no-plots": ("no_plots", "flag"),
    "--gpus": ("gpus", "int"),
    "--gpu-hour-price": ("gpu_hour_price", "float"),
    "--currency": ("currency", "str"),
}
DEFAULTS: dict[str, Any] = {
    "config": None,
    "sets": None,
    "format": ReportFormat.markdown,
    "output": None,
    "patched_config": None,
    "previous": None,
    "fail_on": FailOn.error,
    "training_samples": None,
    "ignore": None,
    "plots_dir": None,
    "no_plots": False,
    "gpus": None,
    "gpu_hour_price": None,
    "currency": None,
}


def parse_argv(argv: Sequence[str]) -> dict[str, Any] | None:
    """The keyword arguments of `execute` for `diagnose ARGV...`, or None when the call is not
    a plain one (the framework then parses it, and says what is wrong with it)."""
    out: dict[str, Any] = dict(DEFAULTS)
    seen: set[str] = set()
    metrics: str | None = None
    i = 0
    while i < len(argv):
        arg = argv[i]
        i += 1
        if not arg.startswith("-"):
            if metrics is not None:
                return None  # an extra argument: the framework's error
            metrics = arg
            continue
        name, eq, attached = arg.partition("=") if arg.startswith("--") else (arg[:2], "", arg[2:])
        spec = _OPTIONS.get(name)
        if spec is None:
            return None  # --help, --, -, an unknown option
        param, kind = spec
        if kind == "flag":
            if eq or attached or param in seen:
                return None
            seen.add(param)
            out[param] = True
            continue
        if eq or attached:
            value = attached
        elif i < len(argv):
            value = argv[i]
            i += 1
        else:
            return None  # the option's value is missing
        if value == "" or value.startswith("-"):
            return None  # the framework decides what such a value means
        if kind == "list":
            out[param] = [*(out[param] or []), value]
            continue
        if kind == "paths":
            out[param] = [*(out[param] or []), Path(value)]
            continue
        if param in seen:
            return None
        seen.add(param)
        if kind == "path":
            out[param] = Path(value)
        elif kind == "int":
            try:
                out[param] = int(value)
            except ValueError:
                return None
        elif kind == "float":
            try:
                out[param] = float(value)
            except ValueError:
                return None
        elif kind == "str":
            out[param] = value
        else:
            try:
                out[param] = kind(value)
            except ValueError:
                return None
    if metrics is None:
        return None
    out["metrics"] = Path(metrics)
    return out
