"""The third-party modules whose import costs more than a command that does not use them
should pay, imported on first use: `from advisor import lazy`, then `lazy.polars.col(...)`.

Everything else is imported at the top of the module that uses it (the config, static and
dialect modules cost ~5 ms each). These are the exceptions, with what importing each costs
(CPU, bytecode cached; pydantic is imported only to check a rulebook not yet cached):

| name | cost | needed by |
|---|---|---|
| `polars` | ~120 ms | reading a run |
| `numpy` | ~55 ms | reading a run, judging it, drawing its charts |
| `jinja2` | ~15 ms | the Markdown templates (report, `validate`, `rules`; not `--format json`) |
| `typer` | ~25 ms (click and the CLI framework) | every command but a plain `diagnose` call |
| `yaml` | ~12 ms (ruamel.yaml, pure Python) | a job file; a rulebook not yet cached |
| `multiprocessing`, `pool` | ~15 ms (`concurrent.futures.process`) | `diagnose_many`'s workers |

The package's own costly modules are imported inside the functions that use them, as plain
imports that tools (mypy, import-linter) see: `engine` (~65 ms with numpy; judging a run,
`rules`), `remedy` (the advice, after judging), `api` and `config` (~15 ms: the job model and
the cached rulebooks; a diagnosis once its read started) and `report` (the online report).

`import advisor` and the online Advisor's import import none of them; `rl-advisor validate`
imports jinja2 alone.
`rl-advisor diagnose` reads the run on a second thread while it imports the API and the engine
(`advisor.reading`): imported at the top of the command, they would be imported before the read
instead of alongside it.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import concurrent.futures.process as pool
    import multiprocessing

    import jinja2
    import numpy
    import polars
    import ruamel.yaml as yaml
    import typer

__all__ = [
    "jinja2",
    "multiprocessing",
    "numpy",
    "polars",
    "pool",
    "typer",
    "yaml",
]

_MODULES = {
    "polars": "polars",
    "numpy": "numpy",
    "jinja2": "jinja2",
    "typer": "typer",
    "multiprocessing": "multiprocessing",
    "pool": "concurrent.futures.process",
    "yaml": "ruamel.yaml",
}


def __getattr__(name: str) -> ModuleType:
    target = _MODULES.get(name)
    if target is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = importlib.import_module(target)
    globals()[name] = module  # found directly from now on
    return module
