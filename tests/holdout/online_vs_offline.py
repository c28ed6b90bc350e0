"""Does the library hook judge as `diagnose` does? (contract.md: "observe ... judges exactly as
diagnose does on the same series").

    python tests/holdout/online_vs_offline.py /tmp/ho1 /tmp/ho2     # after score.py --api

Replays every verl-JSONL and TRL trainer_state run of a scored holdout corpus through
`advisor.Advisor.from_config(job.yaml).observe(step, raw_metrics)` (TRL's evaluation entry of
the same step marked `partial=True` on the training entry, as the TRL callback does), then
`close()`, and compares (id, severity, onset_step) of every finding with the kept
`diagnosis.json`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def _pairs(run_dir: Path, label: dict[str, Any]) -> list[tuple[int, dict[str, Any]]]:
    text = (run_dir / label["metrics_file"]).read_text(encoding="utf-8")
    if label["format"] == "verl-jsonl":
        rows = [json.loads(x) for x in text.splitlines() if x.strip()]
        return [(int(r["step"]), r["data"]) for r in rows]
    hist = json.loads(text)["log_history"]
    return [(int(e["step"]), {k: v for k, v in e.items() if k != "step"}) for e in hist]


def replay(run_dir: Path) -> tuple[list[tuple], list[tuple]] | None:
    from advisor import Advisor

    label = json.loads((run_dir / "label.json").read_text(encoding="utf-8"))
    kept = run_dir / "diagnosis.json"
    if label["format"] not in ("verl-jsonl", "trl-state") or not kept.exists():
        return None
    adv = Advisor.from_config(run_dir / "job.yaml")
    pairs = _pairs(run_dir, label)
    for i, (step, data) in enumerate(pairs):
        nxt = pairs[i + 1][0] if i + 1 < len(pairs) else None
        adv.observe(step, data, partial=nxt == step)
    adv.close()
    online = sorted((f.id, str(getattr(f.severity, "value", f.severity)), f.onset_step)
                    for f in adv.findings)
    offline = sorted((f["id"], f["severity"], f["onset_step"])
                     for f in json.loads(kept.read_text(encoding="utf-8"))["findings"])
    return online, offline


def main(argv: list[str]) -> int:
    same = total = 0
    for root in argv:
        for lp in sorted(Path(root).glob("*/label.json")):
            got = replay(lp.parent)
            if got is None:
                continue
            total += 1
            online, offline = got
            if online == offline:
                same += 1
                continue
            extra = sorted(set(online) - set(offline))
            missing = sorted(set(offline) - set(online))
            print(f"{lp.parent}: online only {extra}; diagnose only {missing}")
    print(f"online == diagnose on {same} / {total} runs")
    return 0 if same == total else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
