"""The expression language of the config rulebook (rulebook/config.yaml): a safe subset of
Python expressions over a flat scope of names, the names it may call (FUNCTIONS), and how a
value and a message template are said (`fmt`, `render`). A name whose value is unknown raises
Unknown: a rule that needs it is skipped, never judged on an invented value.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any


class Unknown(Exception):
    """A value the expression needs is unknown (missing, or None where a number is needed)."""


def _truthy(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in {"1", "true", "yes", "on"}
    return bool(value)


def _values(value: Any) -> list[Any]:
    if isinstance(value, Mapping):
        return list(value.values())
    if isinstance(value, list | tuple):
        return list(value)
    raise Unknown("not a mapping")


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "min": min,
    "max": max,
    "abs": abs,
    "ceil": math.ceil,
    "floor": math.floor,
    "round": round,
    "len": len,
    "sum": sum,
    "values": _values,
    "get": lambda m, k: m.get(k) if isinstance(m, Mapping) else None,
    "truthy": _truthy,
    "startswith": lambda s, p: isinstance(s, str) and s.startswith(p),
}

_BINOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Mod: lambda a, b: a % b,
    ast.Pow: lambda a, b: a**b,
}
_CMPOPS: dict[type, Callable[[Any, Any], bool]] = {
    ast.Eq: lambda a, b: a == b,
    ast.NotEq: lambda a, b: a != b,
    ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b,
    ast.Gt: lambda a, b: a > b,
    ast.GtE: lambda a, b: a >= b,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
    ast.Is: lambda a, b: a is b,
    ast.IsNot: lambda a, b: a is not b,
}
_ALLOWED = (
    ast.Expression,
    ast.Constant,
    ast.Name,
    ast.Load,
    ast.BinOp,
    ast.UnaryOp,
    ast.BoolOp,
    ast.Compare,
    ast.IfExp,
    ast.Call,
    ast.Tuple,
    ast.List,
    ast.And,
    ast.Or,
    ast.Not,
    ast.USub,
    ast.UAdd,
    *_BINOPS,
    *_CMPOPS,
)


@cache
def _parse(expr: str) -> ast.Expression:
    try:
        tree = ast.parse(expr.strip(), mode="eval")
    except SyntaxError as err:
        raise ValueError(f"bad expression {expr!r}: {err.msg}") from None
    for node in ast.walk(tree):
        if not isinstance(node, _ALLOWED):
            raise ValueError(f"expression {expr!r}: {type(node).__name__} is not allowed")
        if isinstance(node, ast.Call) and not (
            isinstance(node.func, ast.Name) and node.func.id in FUNCTIONS and not node.keywords
        ):
            raise ValueError(f"expression {expr!r}: only {sorted(FUNCTIONS)} may be called")
    return tree


def evaluate(expr: str, scope: Mapping[str, Any]) -> Any:
    """Evaluate a rule expression; raises Unknown when a needed value is unknown."""
    return _eval(_parse(expr).body, scope)


def _eval(node: ast.AST, scope: Mapping[str, Any]) -> Any:
    match node:
        case ast.Constant(value=value):
            return value
        case ast.Name(id=name):
            if name in ("True", "False", "None"):
                return {"True": True, "False": False, "None": None}[name]
            if name not in scope:
                raise Unknown(name)
            return scope[name]
        case ast.BoolOp(op=op, values=values):
            result: Any = None
            for sub in values:
                result = _eval(sub, scope)
                if isinstance(op, ast.And) != bool(result):
                    return result
            return result
        case ast.UnaryOp(op=op, operand=operand):
            value = _eval(operand, scope)
            if isinstance(op, ast.Not):
                return not value
            return _arith(lambda v: -v if isinstance(op, ast.USub) else +v, value)
        case ast.BinOp(left=left, op=op, right=right):
            return _arith(_BINOPS[type(op)], _eval(left, scope), _eval(right, scope))
        case ast.Compare(left=left, ops=ops, comparators=comparators):
            return _compare(left, ops, comparators, scope)
        case ast.IfExp(test=test, body=body, orelse=orelse):
            return _eval(body if _eval(test, scope) else orelse, scope)
        case ast.Call(func=ast.Name(id=name), args=args):
            return _arith(FUNCTIONS[name], *(_eval(a, scope) for a in args), allow_none=True)
        case ast.Tuple(elts=elts) | ast.List(elts=elts):
            return tuple(_eval(e, scope) for e in elts)
    raise ValueError(f"unsupported expression node {type(node).__name__}")


def _arith(fn: Callable[..., Any], *args: Any, allow_none: bool = False) -> Any:
    if not allow_none and any(a is None for a in args):
        raise Unknown("None operand")
    try:
        return fn(*args)
    except (TypeError, ValueError, ZeroDivisionError, OverflowError) as err:
        raise Unknown(str(err)) from None


def _compare(left: ast.AST, ops: list[ast.cmpop], comps: list[ast.expr], scope: Any) -> bool:
    value = _eval(left, scope)
    for op, comp in zip(ops, comps, strict=True):
        other = _eval(comp, scope)
        identity = isinstance(op, ast.Is | ast.IsNot | ast.Eq | ast.NotEq)
        if not identity and (value is None or other is None):
            raise Unknown("None compared")
        try:
            ok = _CMPOPS[type(op)](value, other)
        except TypeError as err:
            raise Unknown(str(err)) from None
        if not ok:
            return False
        value = other
    return True


def fmt(value: Any) -> str:
    """Format a value for a message: short floats, 2e-6 not 2e-06."""
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value)) if abs(value) >= 1 else "0"
        text = f"{value:.6g}"
        return re.sub(r"e([+-])0*(\d)", lambda m: f"e{'-' if m[1] == '-' else ''}{m[2]}", text)
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k}: {fmt(v)}" for k, v in value.items()) + "}"
    return str(value)


_PLACEHOLDER = re.compile(r"\{([^{}]+)\}")


def render(template: str, scope: Mapping[str, Any]) -> str:
    """Fill `{expression}` parts of a message; an unknown value shows as '?'."""

    def one(match: re.Match[str]) -> str:
        try:
            return fmt(evaluate(match[1], scope))
        except (Unknown, ValueError):
            return "?"

    return _PLACEHOLDER.sub(one, template)
