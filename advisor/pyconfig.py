"""Read a job written in Python as the guide writes it: `client.run(...)` / `submit_job(...)`.

Never executes anything: the source is parsed with `ast` and only literals, the guide's
component constructors (RolloutFunctionComponent, FunctionComponentRuntime(**rollout_runtime),
TrainingDataset(...), ...) and names assigned a literal at module level are understood. The
result is the keyword layout as nested dicts and lists that carry their source lines the way
ruamel's round-trip nodes do (`.lc.key(k)` / `.lc.item(i)`), so findings name file:line.
"""

from __future__ import annotations

import ast
from typing import Any

# constructor name -> the function type it stands for
_FUNCTION_TYPES = {
    "RolloutFunctionComponent": "rollout",
    "RewardFunctionComponent": "reward",
    "GroupRewardFunctionComponent": "group_reward",
}
_ENTRY_CALLS = ("run", "submit_job")


class _LC:
    """Line/column of each key or item, 0-based like ruamel's `lc`."""

    def __init__(self) -> None:
        self.keys: dict[Any, tuple[int, int]] = {}

    def key(self, k: Any) -> tuple[int, int]:
        return self.keys[k]

    def item(self, i: int) -> tuple[int, int]:
        return self.keys[i]


class LinedDict(dict):  # type: ignore[type-arg]
    def __init__(self) -> None:
        super().__init__()
        self.lc = _LC()


class LinedList(list):  # type: ignore[type-arg]
    def __init__(self) -> None:
        super().__init__()
        self.lc = _LC()


class _Unreadable(Exception):
    """Not a Python job: the caller reports the YAML error instead."""


def read_python_job(text: str) -> dict[str, Any] | None:
    """The keyword arguments of the first run()/submit_job() call, or None if there is none."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    names: dict[str, ast.expr] = {}
    for node in tree.body:  # module-level NAME = literal, for **rollout_runtime and the like
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name):
                names[target.id] = node.value
    call = next(
        (n for n in ast.walk(tree) if isinstance(n, ast.Call) and _name(n.func) in _ENTRY_CALLS),
        None,
    )
    if call is None:
        return None
    try:
        return _keywords(call, names)
    except (_Unreadable, RecursionError):
        return None


def _name(func: ast.expr) -> str:
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def _keywords(call: ast.Call, names: dict[str, ast.expr], depth: int = 0) -> LinedDict:
    out = LinedDict()
    for kw in call.keywords:
        if kw.arg is None:  # **mapping
            spread = _value(kw.value, names, depth + 1)
            if isinstance(spread, dict):
                here = (kw.value.lineno - 1, kw.value.col_offset)
                for k, v in spread.items():
                    out[k] = v  # the line where the key is written, else the ** itself
                    out.lc.keys[k] = getattr(spread, "lc", _LC()).keys.get(k, here)
            continue
        out[kw.arg] = _value(kw.value, names, depth + 1)
        out.lc.keys[kw.arg] = (kw.lineno - 1, kw.col_offset)
    return out


def _value(node: ast.expr, names: dict[str, ast.expr], depth: int) -> Any:
    if depth > 20:
        raise _Unreadable
    match node:
        case ast.Constant(value=value):
            return value
        case ast.UnaryOp(op=ast.USub(), operand=ast.Constant(value=int() | float() as v)):
            return -v
        case ast.Dict(keys=keys, values=values):
            out = LinedDict()
            for k, item in zip(keys, values, strict=True):
                if k is None:  # {**other}
                    spread = _value(item, names, depth + 1)
                    if isinstance(spread, LinedDict):
                        out.update(spread)
                        out.lc.keys.update(spread.lc.keys)
                    continue
                key = _value(k, names, depth + 1)
                if not isinstance(key, str | int | float | bool) and key is not None:
                    key = ast.unparse(k)  # a tuple or a call as a key: its source text
                out[key] = _value(item, names, depth + 1)
                out.lc.keys[key] = (k.lineno - 1, k.col_offset)
            return out
        case ast.List(elts=elts) | ast.Tuple(elts=elts):
            items = LinedList()
            for i, e in enumerate(elts):
                items.append(_value(e, names, depth + 1))
                items.lc.keys[i] = (e.lineno - 1, e.col_offset)
            return items
        case ast.Call(func=func):
            out = _keywords(node, names, depth)
            kind = _FUNCTION_TYPES.get(_name(func))
            if kind and "type" not in out:
                out["type"] = kind
                out.lc.keys["type"] = (node.lineno - 1, node.col_offset)
            return out
        case ast.Name(id=name) if name in names and depth < 20:
            return _value(names[name], names, depth + 1)
        case ast.Attribute():  # FunctionType.ROLLOUT, DataSourceType.FILE_ID
            return ast.unparse(node)
        case ast.Name(id=name):
            return name
    return ast.unparse(node)  # anything else stays as its source text, then fails typing
