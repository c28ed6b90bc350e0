from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from report_helpers import HP, make_rules


@pytest.fixture
def rules() -> SimpleNamespace:
    return make_rules()


@pytest.fixture
def hp() -> dict[str, Any]:
    return dict(HP)
