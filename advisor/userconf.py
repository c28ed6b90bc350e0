"""A user's own overrides of the symptom rules: a rule turned off, its severity, its thresholds.

Found, first match wins: the file `--rules-config FILE` names (the CLI puts it in
RL_ADVISOR_RULES_CONFIG), else `rl-advisor.toml` or a `pyproject.toml` with a
`[tool.rl-advisor]` table in the working folder or the nearest folder above it.

    [rules.SLOW]
    enabled = false            # never judged
    [rules.P2]
    severity = "warning"       # error | warning | info
    [rules.P4.params]
    value = 0.02               # every detector of P4 that reads `value` (rl-advisor rules P4)

(in pyproject.toml the same tables sit under `tool.rl-advisor`: `[tool.rl-advisor.rules.P4]`).
Every name and value is checked against the rulebook and the detectors' declared parameters
(rulebook/detectors.yaml); a typo is one line naming the file and the key, with the nearest
valid name. Read only when a diagnosis loads its rules, and only the small TOML file.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from advisor.types import InputError

ENV = "RL_ADVISOR_RULES_CONFIG"
FILE = "rl-advisor.toml"
SEVERITIES = ("error", "warning", "info")
RULE_KEYS = ("enabled", "severity", "params")


def find(start: Path | None = None) -> tuple[Path, tuple[str, ...]] | None:
    """The user's rules file and where its tables sit inside it (() or ("tool", "rl-advisor"))."""
    named = os.environ.get(ENV)
    if named:
        path = Path(named)
        if not path.is_file():
            raise InputError(f"{path}: --rules-config: no such file")
        inside = ("tool", "rl-advisor") if path.name == "pyproject.toml" else ()
        return path, inside
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        own = folder / FILE
        if own.is_file():
            return own, ()
        project = folder / "pyproject.toml"
        try:
            if project.is_file() and "tool.rl-advisor" in project.read_text(encoding="utf-8"):
                return project, ("tool", "rl-advisor")
        except (OSError, UnicodeDecodeError):
            continue
    return None


TABLES = ("rules", "alerts")  # the tables a user config file holds


def _near(word: str, choices: Iterable[str]) -> str:
    import difflib  # (only an unknown name is matched)

    near = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {near[0]}?)" if near else ""


def read(path: Path, inside: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    """The overrides of `path`, by rule id, checked against the rulebook (InputError if not)."""
    import tomllib

    try:
        data: Any = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as err:
        raise InputError(f"{path}: cannot read the rules config: {err}") from None
    except tomllib.TOMLDecodeError as err:
        raise InputError(f"{path}: not valid TOML: {err}") from None
    if not inside and isinstance(data, dict) and "rules" not in data and "tool" in data:
        inside = ("tool", "rl-advisor")  # a pyproject-style file under another name
    prefix = ""
    for key in inside:
        data = data.get(key, {}) if isinstance(data, dict) else {}
        prefix += key + "."
    return check(data, f"{path}: {prefix}")


def check(data: Any, where: str) -> dict[str, dict[str, Any]]:
    """`data` (the file's table) validated: {rule id: {enabled, severity, params}}."""
    from advisor.book.paramspec import detector_book
    from advisor.book.symptoms import load_symptom_rules, walk

    if not isinstance(data, dict):
        raise InputError(f"{where.rstrip('.')}: expected a table")
    for key in data:
        # `alerts` is the same file's table for watch and the hooks (advisor.alerts checks it)
        if key not in TABLES:
            raise InputError(
                f"{where}{key}: unknown key, expected one of {', '.join(TABLES)}"
                f"{_near(key, TABLES)}"
            )
    rules = data.get("rules", {})
    if not isinstance(rules, dict):
        raise InputError(f"{where}rules: expected a table of rule ids")
    by_id = load_symptom_rules().by_id
    book = detector_book()
    out: dict[str, dict[str, Any]] = {}
    for rule_id, said in rules.items():
        place = f"{where}rules.{rule_id}"
        if rule_id not in by_id:
            raise InputError(f"{place}: no such rule{_near(rule_id, by_id)}")
        if not isinstance(said, dict):
            raise InputError(f"{place}: expected a table (enabled, severity, params)")
        for key in said:
            if key not in RULE_KEYS:
                raise InputError(
                    f"{place}.{key}: unknown key, expected one of "
                    f"{', '.join(RULE_KEYS)}{_near(key, RULE_KEYS)}"
                )
        if "enabled" in said and not isinstance(said["enabled"], bool):
            raise InputError(f"{place}.enabled: expected true or false, found {said['enabled']!r}")
        if "severity" in said and said["severity"] not in SEVERITIES:
            sev = said["severity"]
            hint = _near(sev, SEVERITIES) if isinstance(sev, str) else ""
            raise InputError(
                f"{place}.severity: expected one of {', '.join(SEVERITIES)}, found {sev!r}{hint}"
            )
        params = said.get("params", {})
        if not isinstance(params, dict):
            raise InputError(f"{place}.params: expected a table of parameter = value")
        leaves = [leaf for _, leaf in walk(by_id[rule_id].when)]
        known = {key: leaf.detector for leaf in leaves for key in book.keys_of(leaf.detector)}
        for name, value in params.items():
            if name not in known:
                raise InputError(
                    f"{place}.params.{name}: {rule_id} has no parameter {name}"
                    f"{_near(name, known)}; `rl-advisor rules {rule_id}` lists them"
                )
            for leaf in leaves:
                spec = book.params_of(leaf.detector).get(name)
                problem = spec.problem(value) if spec is not None else None
                if problem:
                    raise InputError(f"{place}.params.{name}: {problem}")
        out[rule_id] = dict(said)
    return out


def _with_params(node: Any, params: Mapping[str, Any], book: Any) -> Any:
    """`node`'s tree with `params` set on every leaf whose detector reads them."""
    from advisor.book.symptoms import AllOf, AnyOf, Leaf, NotOf

    if isinstance(node, Leaf):
        mine = {k: v for k, v in params.items() if k in book.keys_of(node.detector)}
        return dataclasses.replace(node, params={**node.params, **mine}) if mine else node
    if isinstance(node, AllOf):
        return dataclasses.replace(node, all=[_with_params(n, params, book) for n in node.all])
    if isinstance(node, AnyOf):
        return dataclasses.replace(node, any=[_with_params(n, params, book) for n in node.any])
    if isinstance(node, NotOf):
        return dataclasses.replace(node, not_=_with_params(node.not_, params, book))
    return node


def apply(rulebook: Any, overrides: Mapping[str, Mapping[str, Any]]) -> Any:
    """A copy of `rulebook` with the overrides made (a rule off is left out)."""
    from advisor.book.paramspec import detector_book
    from advisor.types import Severity

    book = detector_book()
    rules = []
    for rule in rulebook.rules:
        said = overrides.get(rule.id)
        if not said:
            rules.append(rule)
            continue
        if said.get("enabled") is False:
            continue
        if "severity" in said:
            rule = dataclasses.replace(rule, severity=Severity(said["severity"]))
        if said.get("params"):
            rule = dataclasses.replace(rule, when=_with_params(rule.when, said["params"], book))
        rules.append(rule)
    return dataclasses.replace(rulebook, rules=rules)


_APPLIED: dict[tuple[str, tuple[str, ...], float, int], Any] = {}


def rules_for_run(base: Any) -> Any:
    """`base` (the symptom rulebook) with the user's overrides, when a rules file is found
    (made once per file version and rulebook)."""
    found = find()
    if found is None:
        return base
    path, inside = found
    key = (str(path), inside, path.stat().st_mtime, id(base))
    if key not in _APPLIED:
        _APPLIED.clear()
        _APPLIED[key] = apply(base, read(path, inside))
    return _APPLIED[key]
