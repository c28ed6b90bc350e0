"""Closed loop on the live-fire range: train, diagnose, apply the advice as a user does, retrain.

    .venv/bin/pip install -e '.[livefire]'
    .venv/bin/python scripts/closed_loop.py                   # every case, seeds 1234 1235 1236
    .venv/bin/python scripts/closed_loop.py --case lr-tiny --seed 1234 --rounds 3
    .venv/bin/python scripts/closed_loop.py --table-only      # docs/closed-loop.md from records

Per case and seed, round 0 trains the case's own settings (`scripts/live_fire.py`); each round
is diagnosed through the installed CLI, as a user would:

    rl-advisor diagnose ROUND_DIR --format json --patched-config next.yaml [--previous EARLIER]

and the next round trains from `next.yaml` (`live_fire.py --config next.yaml`): the patch the
advisor wrote of the job file the TRL callback left (`rl-advisor-job.yaml`). The loop stops when
the round is cured (below), when the advice changes nothing in the job file, or after `--rounds`
rounds after round 0. Nothing here reads the advisor's internals: only the CLI's JSON and files.

Cured: the diagnosis has no warning or error finding, and the run learns as `sane` does: mean
train reward over the last 20 steps >= 0.7 x sane's round 0 at the same seeds (their mean),
mean entropy over the last 20 steps >= 1, and truncation (clipped ratio) < 10 %. A case is cured
on the seeds' mean; the table shows the spread.

Every round is recorded under tests/livefire/loop/<case>/s<seed>/r<k>/ (what diagnose reads:
trainer_state.json, or train.log for a run that crashed; the callback's rl-advisor-run.json,
rl-advisor-job.yaml and reports; the CLI's diagnosis.json and next.yaml; round.json with the
settings and the training time). A recorded round is not trained again (`--fresh` forces it).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
LOOP = ROOT / "tests" / "livefire" / "loop"
DOC = ROOT / "docs" / "closed-loop.md"
SEEDS = (1234, 1235, 1236)
ROUNDS = 3
LAST = 20  # steps the outcome is averaged over
CLI = Path(sys.executable).with_name("rl-advisor")

ROUND_FILE = "round.json"
DIAGNOSIS = "diagnosis.json"
NEXT = "next.yaml"
JOB = "rl-advisor-job.yaml"
# What a recorded round keeps of the run's folder (no weights, no plots, no console when the
# trainer state holds the same log).
KEEP = ("trainer_state.json", "rl-advisor-run.json", JOB, "rl-advisor-report.md",
        "rl-advisor-report.json")  # fmt: skip


def _live_fire() -> Any:
    spec = importlib.util.spec_from_file_location("live_fire", ROOT / "scripts" / "live_fire.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, mod)
    spec.loader.exec_module(mod)
    return mod


LF = _live_fire()


def round_dir(case: str, seed: int, k: int, root: Path = LOOP) -> Path:
    return root / case / f"s{seed}" / f"r{k}"


def recorded(d: Path) -> dict[str, Any] | None:
    f = d / ROUND_FILE
    return json.loads(f.read_text(encoding="utf-8")) if f.is_file() else None


def _trim(d: Path) -> None:
    """Keep only KEEP (and train.log when the run left no trainer state: a crash)."""
    keep = set(KEEP) | {ROUND_FILE}
    if not (d / "trainer_state.json").is_file():
        keep.add("train.log")
    for p in d.iterdir():
        if p.name in keep:
            continue
        shutil.rmtree(p) if p.is_dir() else p.unlink()
    state = d / "trainer_state.json"
    if state.is_file():  # the same data, one line: a third of the size
        data = json.loads(state.read_text(encoding="utf-8"))
        state.write_text(json.dumps(data, separators=(",", ":")) + "\n", encoding="utf-8")


def train_round(case: str, seed: int, k: int, root: Path = LOOP) -> dict[str, Any]:
    """Train round k of (case, seed) into its record folder; round 0 from the case, a later
    one from the previous round's next.yaml."""
    d = round_dir(case, seed, k, root)
    config = None if k == 0 else round_dir(case, seed, k - 1, root) / NEXT
    if d.exists():
        shutil.rmtree(d)
    rc, secs = LF.spawn(LF.BY_NAME[case], d, (), seed if k == 0 else None, config)
    settings = (
        LF.settings_of(LF.BY_NAME[case], seed=seed)[0]
        if k == 0
        else LF.settings_of(LF.BY_NAME[case], config=LF.read_config(config))[0]
    )
    info = {"case": case, "seed": seed, "round": k, "exit": rc, "seconds": round(secs, 1),
            "settings": settings}  # fmt: skip
    _trim(d)
    (d / ROUND_FILE).write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
    return info


def diagnose(d: Path, previous: Sequence[Path] = ()) -> dict[str, Any]:
    """`rl-advisor diagnose` of a round through the installed CLI: its JSON and next.yaml."""
    target = d if (d / "trainer_state.json").is_file() else d / "train.log"
    cmd = [str(CLI), "diagnose", str(target), "--format", "json", "--fail-on", "never"]
    if (d / JOB).is_file():
        cmd += ["--patched-config", str(d / NEXT)]
    for p in previous:
        cmd += ["--previous", str(p)]
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, check=False)
    if res.returncode != 0:
        raise SystemExit(f"closed_loop: {' '.join(cmd)} exited {res.returncode}: {res.stderr}")
    (d / DIAGNOSIS).write_text(res.stdout, encoding="utf-8")
    return json.loads(res.stdout)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", action="append", choices=sorted(LF.BY_NAME))
    ap.add_argument("--seed", action="append", type=int)
    ap.add_argument("--rounds", type=int, default=ROUNDS, help="Rounds after round 0.")
    ap.add_argument("--root", type=Path, default=LOOP)
    ap.add_argument("--fresh", action="store_true", help="Train recorded rounds again.")
    ns = ap.parse_args(argv)
    cases = ns.case or [c.name for c in LF.CASES]
    seeds = ns.seed or list(SEEDS)
    for case in cases:
        for seed in seeds:
            d = round_dir(case, seed, 0, ns.root)
            if ns.fresh or recorded(d) is None:
                info = train_round(case, seed, 0, ns.root)
                print(
                    f"{case} s{seed} r0: exit {info['exit']}, {info['seconds']:.0f} s", flush=True
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
