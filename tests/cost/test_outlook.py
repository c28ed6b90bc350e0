"""advisor.outlook: when an active trend crosses its threshold, said only on a good fit."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest
import yaml

from advisor import outlook
from advisor.engine import load_symptom_rules

ROOT = Path(__file__).resolve().parents[2]


def _decay(tau: float = 100.0, n: int = 200, noise: float = 0.02, seed: int = 0):
    rng = random.Random(seed)
    steps = list(range(200, 200 + n))
    return steps, [math.exp(-s / tau) * (1 + rng.gauss(0, noise)) for s in steps]


def test_an_exponential_decay_crosses_where_it_should() -> None:
    steps, values = _decay()
    got = outlook.crossing(steps, values, 0.01, "down", log=True)
    assert got is not None
    truth = 100 * math.log(100)  # exp(-s / 100) = 0.01 at s = 460.5
    assert abs(got["step"] - truth) <= 2
    lo, hi = got["interval"]
    assert lo <= truth <= hi + 1
    assert got["r2"] >= outlook.MIN_R2 and got["points"] == 200 and got["last_step"] == 399


def test_the_interval_widens_with_the_noise() -> None:
    quiet = outlook.crossing(*_decay(noise=0.01), 0.01, "down", log=True)
    loud = outlook.crossing(*_decay(noise=0.1), 0.01, "down", log=True)
    assert quiet is not None and loud is not None
    assert loud["interval"][1] - loud["interval"][0] > quiet["interval"][1] - quiet["interval"][0]


def test_the_same_series_gives_the_same_forecast() -> None:
    steps, values = _decay(noise=0.1)
    assert outlook.crossing(steps, values, 0.01, "down", True) == outlook.crossing(
        steps, values, 0.01, "down", True
    )


def test_a_rising_kl_crosses_linear_growth_on_its_own_scale() -> None:
    steps = list(range(0, 100))
    values = [100 + 2 * s + (1 if s % 2 else -1) for s in steps]
    got = outlook.crossing(steps, values, 400, "up", log=False)
    assert got is not None and abs(got["step"] - 150) <= 1


@pytest.mark.parametrize(
    ("values", "why"),
    [
        ([0.5 + 0.2 * ((-1) ** i) for i in range(100)], "no trend: R^2 too low"),
        ([0.5 + 0.001 * i for i in range(100)], "slopes away from the floor"),
        ([0.005 * (1 - 0.001 * i) for i in range(100)], "already past the floor"),
        ([1.0 - 0.0001 * i for i in range(100)], "the crossing is too far ahead"),
        ([0.5, 0.4, 0.3, 0.2, 0.1], "too few points"),
    ],
)
def test_a_fit_not_good_enough_says_nothing(values, why) -> None:
    steps = list(range(len(values)))
    assert outlook.crossing(steps, values, 0.01, "down", log=True) is None, why


def test_the_thresholds_are_the_rulebooks() -> None:
    doc = yaml.safe_load((ROOT / "rulebook" / "symptoms.yaml").read_text())
    floor = doc["conditions"]["entropy_floor"]["when"]["params"]["value"]
    rules = load_symptom_rules()
    got = outlook.targets(rules, "grpo", {"max_length": 4096}, {})
    assert got["entropy"][0] == floor
    assert "response_length" not in got  # a default max_length is no known limit
    level = next(
        leaf["params"]["value"]
        for leaf in _leaves(next(r for r in doc["rules"] if r["id"] == "P3")["when"])
        if leaf.get("detector") == "above" and leaf.get("metric") == "kl_ref"
    )
    for algo in ("grpo", "gspo", "dapo", None):
        want = level.get(algo) or level["default"] if isinstance(level, dict) else level
        assert outlook.targets(rules, algo, {}, {})["kl_ref"][0] == want
    said = {"max_length": "file", "max_prompt_length": "file"}
    got = outlook.targets(rules, "grpo", {"max_length": 4096, "max_prompt_length": 1024}, said)
    assert got["response_length"][0] == 3072


def _leaves(node):
    if isinstance(node, dict):
        if "detector" in node:
            yield node
        for key in ("all", "any"):
            for child in node.get(key) or []:
                yield from _leaves(child)
        if "not" in node:
            yield from _leaves(node["not"])
