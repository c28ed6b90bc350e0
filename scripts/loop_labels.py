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
    "gen-two": {
        "expected": [],
        "expected_any": ["P1", "DAPO-ZSTD"],
        "acceptable": ["P1", "DAPO-ZSTD"],
        "forbidden": ["all"],
        "primary_any": ["DAPO-ZSTD"],
        "note": "num_generations 2 (8 prompts a step): in 75-100 % of the groups both answers "
        "score alike, so the group-relative advantage is zero and nothing is learnt; at seed "
        "1234 the reward stays at the random level (0.10-0.21; last 20 steps 0.20, sane 0.86), "
        "entropy at 2.5, while the free tokens drift (KL to the reference ~0.1). P1 (a reward "
        "that never rose) and DAPO-ZSTD (groups of equal rewards) are both true; the cure is "
        "more generations (8, sane's), which DAPO-ZSTD's advice names, so it should lead. "
        "P3 is not: the KL stays below sane's own (~0.5).",
    },
    "cap-short": {
        "expected": [],
        "expected_any": ["P9"],
        "acceptable": ["P1", "P3", "P4", "DAPO-ZSTD"],
        "forbidden": ["all"],
        "primary_any": ["P9"],
        "note": "max_completion_length 4: at the start 69 % of the completions are cut (reward "
        "0); the policy learns to end within four tokens, so the free tokens after the answer "
        "are few and the entropy falls to 1.2-1.3 (sane 2.2), KL to the reference ~1; the "
        "reward climbs only to 0.28-0.46 (last 20 steps 0.31 at seed 1234, sane 0.86), "
        "truncation 0-14 %. The cap is the cause: P9 (truncation) must fire and lead (raise "
        "the cap; 48 is sane's). P1, P3 (the KL a short answer pays), P4 and DAPO-ZSTD are "
        "true of the curves and acceptable.",
    },
    "beta-high": {
        "expected": [],
        "expected_any": ["KL0", "P1"],
        "acceptable": ["KL0", "P1"],
        "forbidden": ["all"],
        "primary_any": ["KL0"],
        "note": "beta 1, 10 x sane: the KL term holds the policy near the reference; at seed "
        "1234 the reward climbs from 0.14 to ~0.3 by step 60 and stays there (last 20 steps "
        "0.30, sane 0.86), entropy pinned at the random policy's 2.49, KL to the reference flat "
        "at 0.02-0.03. A reward that stopped rising far below what the task allows: P1 is true "
        "of the curve, and KL0 (the penalty outweighs the reward) names the cause and the cure "
        "(beta down, 0.1 being sane's), so KL0 should lead; P1's learning-rate raise cannot "
        "move the regularised optimum. One of the two must fire; no other id may.",
    },
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


HEALTHY_NOTE = (
    "A healthy variant ({cause}): a setting inside the healthy band for this task, which "
    "learns as sane does; no id may fire and no change may be advised."
)


def label_of(case: str) -> dict[str, Any] | None:
    sys.path.insert(0, str(ROOT / "scripts"))
    import live_fire as lf

    c = lf.BY_NAME[case]
    base = LABELS.get(case)
    if base is None and c.healthy and case != "sane":
        base = {"expected": [], "acceptable": [], "forbidden": ["all"],
                "note": HEALTHY_NOTE.format(cause=c.cause)}  # fmt: skip
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
