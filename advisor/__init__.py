"""rl-advisor: a diagnostic advisor for RL fine-tuning of LLMs (GSPO, GRPO, DAPO).

The public API is imported lazily so that `import advisor` (and the CLI start-up) stays light.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from advisor._version import __version__

__all__ = ["Advisor", "__version__", "diagnose", "load_config", "load_run", "validate"]

if TYPE_CHECKING:
    from advisor.api import diagnose, validate
    from advisor.config import load_config
    from advisor.ingest import load_run
    from advisor.online import Advisor

_LAZY = {
    "Advisor": "advisor.online",
    "diagnose": "advisor.api",
    "validate": "advisor.api",
    "load_config": "advisor.config",
    "load_run": "advisor.ingest",
}


def __getattr__(name: str) -> object:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'advisor' has no attribute {name!r}")
