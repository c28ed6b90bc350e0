"""Labels of the closed loop's round 0 (tests/livefire/loop/<case>/label.json): the hand-written
judgement of each cause (`LABELS` below, or the case's label in tests/livefire/runs/), with the
recorded seeds' round-0 files as its inputs, so `rl-advisor harness --livefire
tests/livefire/loop` scores the range at every seed.

    .venv/bin/python scripts/loop_labels.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
LOOP = ROOT / "tests" / "livefire" / "loop"
RUNS = ROOT / "tests" / "livefire" / "runs"

# Written from the cause and the round-0 training metrics, before the advisor's output.
LABELS: dict[str, dict[str, Any]] = {
    "lr-low1000": {
        "expected": ["P1"],
        "acceptable": ["KL0"],
        "forbidden": ["all"],
        "primary_any": ["P1"],
        "note": "learning_rate 5e-6, 1e-3 x sane: the policy barely moves (KL to the "
        "reference 2e-5 at step 50, 3e-4 at step 200; entropy 2.50 throughout, the random "
        "policy's), the reward stays at the random level (0.14-0.18 at seed 1234; last 20 steps "
        "0.157, sane 0.86). P1 (a reward that never rose) must fire and lead: its action raises "
        "the learning rate, the cure (5e-3, sane's) being x1000 away. KL0 is true of the early "
        "curve (KL ~0), acceptable; its beta cut cannot help.",
    },
    "temp-low": {
        "expected": ["P9"],
        "expected_any": [],
        "acceptable": ["P1", "P4", "DAPO-ZSTD"],
        "forbidden": ["all"],
        "note": "Near-greedy sampling (temperature 0.1) from a random policy: within ten steps "
        "every completion runs to the 48-token cap (truncation 100 %, reward 0, entropy 0 over "
        "the last 20 steps at seed 1234), so every group scores alike and nothing is learnt. "
        "P9 (truncation) must fire; P1 (a reward that never rose), P4 (entropy at 0) and "
        "DAPO-ZSTD (groups of equal rewards) are true of the curves. DIV is not: nothing "
        "diverged, the reward was never learnt, and its lr cut cannot help. The cure is the "
        "sampling setting (temperature 1.0), which no rule names today, so no primary is set.",
    },
}


def label_of(case: str) -> dict[str, Any] | None:
    sys.path.insert(0, str(ROOT / "scripts"))
    import live_fire as lf

    c = lf.BY_NAME[case]
    base = LABELS.get(case)
    if base is None and (RUNS / case / "label.json").is_file():
        base = json.loads((RUNS / case / "label.json").read_text(encoding="utf-8"))
    if base is None:
        return None
    spec = next(iter(base.get("inputs", {}).values()), None) or {}
    inputs: dict[str, Any] = {}
    for r0 in sorted((LOOP / case).glob("s*/r0")):
        if not (r0 / "round.json").is_file():
            continue
        name = "trainer_state.json" if (r0 / "trainer_state.json").is_file() else "train.log"
        inputs[f"{r0.parent.name}/r0/{name}"] = spec
    return {**base, "case": case, "cause": c.cause, "config": c.overrides, "inputs": inputs}


def main() -> int:
    for d in sorted(p for p in LOOP.iterdir() if p.is_dir()):
        label = label_of(d.name)
        if label is None or not label["inputs"]:
            print(f"{d.name}: no label yet")
            continue
        (d / "label.json").write_text(json.dumps(label, indent=2) + "\n", encoding="utf-8")
        print(f"{d.name}: {len(label['inputs'])} inputs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
