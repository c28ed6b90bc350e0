"""Make the repo root importable (tests import `sample_metrics`, which is not installed), and
run property tests without a per-example deadline: speed is the benchmarks' to judge, and a
shared or loaded machine (CI, live-fire training beside the suite) makes one example's time
say nothing."""

import sys
from pathlib import Path

from hypothesis import settings

_ROOT = str(Path(__file__).resolve().parents[1])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

settings.register_profile("rl-advisor", deadline=None)
settings.load_profile("rl-advisor")
