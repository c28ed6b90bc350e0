"""The detectors' and the engine's source as the audits read it: both are packages, so an audit
that walks the code parses every module of the package into one tree."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
from types import ModuleType


def source_tree(package: ModuleType) -> ast.Module:
    """The top-level statements of every module of `package`, parsed into one tree."""
    body: list[ast.stmt] = []
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        body += ast.parse(inspect.getsource(module)).body
    return ast.Module(body=body, type_ignores=[])
