"""Any config inside the guide's own starting ranges (rulebook/profiles.yaml) carries no error.

The judge's "sound configs" (a 35B-A3B MoE set up as the guide advises, 9B quick / full) may
take any value of each range the guide gives; none may be called an error or a warning.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from advisor.api import validate_job
from advisor.static import profiles

PROFILES = profiles().profiles
RUNTIME = {"cpu": 2, "memory_size": 4096, "disk_size": 512, "concurrency": 30, "capacity": 30,
           "min_capacity": 30, "max_capacity": 60, "memory_scale_threshold": 0.6,
           "concurrency_scale_threshold": 0.6}  # fmt: skip


def value_in(param: str, want: Any) -> st.SearchStrategy[Any]:
    """A guide value, or any value of a guide range (its ends included)."""
    if not isinstance(want, list):
        return st.just(want)
    low, high = want
    if param.endswith("parallel_size"):  # parallel sizes are powers of two (2 to 4: 2 or 4)
        return st.sampled_from([2**i for i in range(9) if low <= 2**i <= high])
    if isinstance(low, int) and isinstance(high, int):
        return st.integers(low, high)
    return st.sampled_from([low, high]) | st.floats(low, high)


def job(profile: str, hp: dict[str, Any]) -> dict[str, Any]:
    return {
        "job_name": "in-range", "model": PROFILES[profile].model, "mode": "reinforcement",
        "datasets": [{"type": "training", "data_source_type": "file_id", "file_name": "t.jsonl"},
                     {"type": "validation", "data_source_type": "file_id", "file_name": "v.jsonl"}],
        "functions": [
            {"type": "rollout", "name": "r", "timeout": 600, "runtime": RUNTIME,
             "fcmodel": {"classpath": "functions.rollout.rollout.R"}},
            {"type": "reward", "name": "w", "weight": 1.0, "timeout": 120, "runtime": RUNTIME,
             "fcmodel": {"classpath": "functions.reward.reward.W"}},
        ],
        "training": {"hyper_parameters": hp, "resources": {
            "charge_type": "mtu_postpaid", "mtu_spec_code": "MTU4", "mtu_capacity": 24}},
    }  # fmt: skip


@st.composite
def in_range_jobs(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    name = draw(st.sampled_from(sorted(PROFILES)))
    hp = {k: draw(value_in(k, v)) for k, v in PROFILES[name].hyper_parameters.items()}
    return name, job(name, hp)


@settings(
    max_examples=45, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(case=in_range_jobs())
def test_guide_ranges_carry_no_error_or_warning(case: tuple[str, dict], tmp_path: Path) -> None:
    name, doc = case
    path = tmp_path / "job.json"
    path.write_text(json.dumps(doc))
    _, diag = validate_job(path)
    # C008 / C009 judge the file's layout and number spelling (json.dumps writes 2e-06), not
    # the values: the ranges are what this test holds
    bad = [
        (f.id, f.message)
        for f in diag.config_findings
        if f.severity.value != "info" and f.id not in ("C008", "C009")
    ]
    assert not bad, (name, doc["training"]["hyper_parameters"], bad)
