"""Closed loop on the live-fire range: train, diagnose, apply the advice as a user does, retrain.

    .venv/bin/pip install -e '.[livefire]'
    .venv/bin/python scripts/closed_loop.py                   # every case, seeds 1234 1235 1236
    .venv/bin/python scripts/closed_loop.py --case lr-tiny --seed 1234 --rounds 3
    .venv/bin/python scripts/closed_loop.py --table-only      # docs/closed-loop.md from records

Per case and seed, round 0 trains the case's own settings (`scripts/live_fire.py`); each round
is diagnosed through the installed CLI, as a user would:

    rl-advisor diagnose ROUND_DIR --format json --patched-config next.yaml \\
        [--previous ROUND_0_DIR --previous ROUND_1_DIR ...]

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
# What a recorded round keeps of the run's folder (no weights, no console when the trainer
# state holds the same log), besides the report's plots.
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
        if p.name in keep or (p.name.startswith("report-") and p.suffix == ".png"):
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
    settings = (
        LF.settings_of(LF.BY_NAME[case], seed=seed)[0]
        if k == 0
        else LF.settings_of(LF.BY_NAME[case], config=LF.read_config(config))[0]
    )
    same = same_run(case, LF.read_config(config), root) if config is not None else None
    if same is not None:  # seeded CPU training: the same settings train the same run
        shutil.copytree(same, d, ignore=shutil.ignore_patterns(DIAGNOSIS, NEXT))
        info = json.loads((d / ROUND_FILE).read_text(encoding="utf-8"))
        info = {**info, "case": case, "seed": seed, "round": k, "settings": settings,
                "same_as": str(same.relative_to(root))}  # fmt: skip
        (d / ROUND_FILE).write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
        return info
    rc, secs = LF.spawn(LF.BY_NAME[case], d, (), seed if k == 0 else None, config)
    info = {"case": case, "seed": seed, "round": k, "exit": rc, "seconds": round(secs, 1),
            "settings": settings}  # fmt: skip
    _trim(d)
    (d / ROUND_FILE).write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
    return info


def same_run(case: str, job: dict[str, Any], root: Path = LOOP) -> Path | None:
    """A recorded round whose job file states the same arguments (seed included) as `job`,
    trained on the same reward function: training again would repeat it step for step
    (seeded, on CPU). None if there is none."""
    reward = LF.BY_NAME[case]
    for f in sorted(root.glob(f"*/s*/r*/{JOB}")):
        other = LF.BY_NAME.get(f.parent.parent.parent.name)
        if other is None or (other.reward, other.reward_step) != (
            reward.reward,
            reward.reward_step,
        ):
            continue
        info = recorded(f.parent)
        if info is None or "same_as" in info or info["exit"] != 0:
            continue
        if LF.read_config(f) == job:
            return f.parent
    return None


def _rel(p: Path) -> str:
    """`p` as said from the repository's root (the CLI runs there): the diagnosis names its
    inputs so, the same on every checkout."""
    try:
        return str(p.resolve().relative_to(ROOT))
    except ValueError:
        return str(p)


def cli_args(d: Path, previous: Sequence[Path], patched: Path) -> list[str]:
    """`rl-advisor` arguments diagnosing round folder `d` (from the repository's root)."""
    target = d if (d / "trainer_state.json").is_file() else d / "train.log"
    args = ["diagnose", _rel(target), "--format", "json", "--fail-on", "never"]
    if (d / JOB).is_file():
        args += ["--patched-config", str(patched)]
    for p in previous:
        args += ["--previous", _rel(p)]
    return args


def diagnose(d: Path, previous: Sequence[Path] = ()) -> dict[str, Any]:
    """`rl-advisor diagnose` of a round through the installed CLI: its JSON (kept as
    diagnosis.json) and, when the run left a job file, the patch of it (next.yaml)."""
    cmd = [str(CLI), *cli_args(d, previous, d / NEXT)]
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, check=False)
    if res.returncode != 0:
        raise SystemExit(f"closed_loop: {' '.join(cmd)} exited {res.returncode}: {res.stderr}")
    (d / DIAGNOSIS).write_text(res.stdout, encoding="utf-8")
    return dict(json.loads(res.stdout))


def previous_of(case: str, seed: int, k: int, root: Path = LOOP) -> list[Path]:
    """What `--previous` gets for round k: every earlier round's folder, oldest first (its job
    file says what it was set to, the callback's report what came of it)."""
    return [round_dir(case, seed, j, root) for j in range(k)]


# ----------------------------------------------------------------------------- outcome


def _mean(xs: Sequence[float]) -> float | None:
    xs = [x for x in xs if x == x]  # NaN out
    return sum(xs) / len(xs) if xs else None


def outcome(d: Path) -> dict[str, Any]:
    """The run's last LAST training steps (mean reward, entropy, truncation) and its last
    validation reward, from trainer_state.json; {"crashed": True} without one."""
    state = d / "trainer_state.json"
    if not state.is_file():
        return {"crashed": True}
    logs = json.loads(state.read_text(encoding="utf-8"))["log_history"]
    train = [r for r in logs if "reward" in r][-LAST:]
    evals = [r["eval_reward"] for r in logs if "eval_reward" in r]

    def col(key: str) -> float | None:
        return _mean([float(r[key]) for r in train if r.get(key) is not None])

    return {
        "crashed": False,
        "reward": col("reward"),
        "entropy": col("entropy"),
        "truncation": col("completions/clipped_ratio"),
        "validation": evals[-1] if evals else None,
    }


def alarms(diag: dict[str, Any]) -> list[str]:
    """The run's findings at warning or error (the config's static findings apart)."""
    return [f["id"] for f in diag.get("findings", []) if f["severity"] in ("warning", "error")]


def config_alarms(diag: dict[str, Any]) -> list[str]:
    return [
        f["id"] for f in diag.get("config_findings", []) if f["severity"] in ("warning", "error")
    ]


def learns(out: dict[str, Any], sane_reward: float) -> bool:
    """Learns as sane does: reward >= 0.7 x sane's, entropy >= 1, truncation < 10 %."""
    if out.get("crashed") or None in (out["reward"], out["entropy"], out["truncation"]):
        return False
    return bool(
        out["reward"] >= 0.7 * sane_reward and out["entropy"] >= 1 and out["truncation"] < 0.1
    )


def change_of(d: Path) -> dict[str, Any]:
    """What next.yaml changes in the round's job file (the advice as applied): key -> (old, new)."""
    if not (d / NEXT).is_file() or not (d / JOB).is_file():
        return {}
    old, new = LF.read_config(d / JOB), LF.read_config(d / NEXT)
    return {
        k: (old.get(k), new.get(k)) for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k)
    }


# ----------------------------------------------------------------------------- the loop


def sane_reward(seeds: Sequence[int], root: Path = LOOP) -> float:
    """The mean over `seeds` of sane's round-0 reward (trained first when missing)."""
    values = []
    for seed in seeds:
        d = round_dir("sane", seed, 0, root)
        if recorded(d) is None:
            train_round("sane", seed, 0, root)
        values.append(outcome(d)["reward"])
    return sum(values) / len(values)


def _drop_from(case: str, seed: int, k: int, root: Path = LOOP) -> None:
    """Remove the recorded rounds k, k+1, ... of (case, seed): an earlier advice's loop."""
    for later in sorted((root / case / f"s{seed}").glob("r*")):
        if later.name[1:].isdigit() and int(later.name[1:]) >= k:
            print(f"{case} s{seed} {later.name}: trained from an earlier advice; removed")
            shutil.rmtree(later)


def loop_seed(
    case: str,
    seed: int,
    rounds: int,
    ref: float,
    root: Path = LOOP,
    fresh: bool = False,
    train: bool = True,
    rediagnose: bool = False,
) -> list[dict[str, Any]]:
    """Rounds 0.. of one case at one seed: train what is not recorded (or whose recorded
    settings are not what the previous round's patch says), diagnose, decide. One dict per
    round (its outcome, diagnosis summary, the change advised, and why the loop stopped)."""
    c = LF.BY_NAME[case]
    rows: list[dict[str, Any]] = []
    config_cause = c.reward == "copy"  # a broken reward function is no config's fault
    for k in range(rounds + 1):
        d = round_dir(case, seed, k, root)
        rec = recorded(d)
        want = (
            LF.settings_of(c, seed=seed)[0]
            if k == 0
            else LF.settings_of(
                c, config=LF.read_config(round_dir(case, seed, k - 1, root) / NEXT)
            )[0]
        )
        if fresh or rec is None or rec["settings"] != want:
            if not train:  # the table of what is recorded: the loop goes no further here
                if rows:
                    rows[-1]["stop"] = f"round {k} not trained yet"
                if rec is not None:  # trained from an earlier advice: no longer this loop's
                    _drop_from(case, seed, k, root)
                break
            rec = train_round(case, seed, k, root)
            print(f"{case} s{seed} r{k}: exit {rec['exit']}, {rec['seconds']:.0f} s", flush=True)
        if train or rediagnose or not (d / DIAGNOSIS).is_file():
            diag = diagnose(d, previous_of(case, seed, k, root))
        else:  # the table of the records as they are (test_closed_loop checks they are today's)
            diag = json.loads((d / DIAGNOSIS).read_text(encoding="utf-8"))
        out = outcome(d)
        change = change_of(d)
        row = {"round": k, "seconds": rec["seconds"], "status": diag.get("status"),
               "alarms": alarms(diag), "config_alarms": config_alarms(diag), "change": change,
               "patch_from": (diag.get("patch") or {}).get("from_finding"),
               "same_as": rec.get("same_as"), **out}  # fmt: skip
        row["learns"] = learns(out, ref)
        row["cured"] = row["learns"] and not row["alarms"]
        rows.append(row)
        stop = None
        if out.get("crashed"):
            stop = "the run crashed"
        elif not config_cause:
            stop = "the cause is the reward function, not a setting"
        elif not change:
            stop = "no change advised"
        elif row["cured"] and not c.healthy:
            stop = "cured"
        elif k == rounds:
            stop = f"{rounds} rounds done"
        if stop:
            row["stop"] = stop
            _drop_from(case, seed, k + 1, root)  # rounds of an earlier loop's advice
            break
    return rows


# ----------------------------------------------------------------------------- the table


def _num(x: float | None, fmt: str = ".2f") -> str:
    return "–" if x is None else format(x, fmt)


def _spread(values: Sequence[float | None], fmt: str = ".2f", pct: bool = False) -> str:
    """mean (min–max) of the seeds' values."""
    xs = [v * (100 if pct else 1) for v in values if v is not None and v == v]
    if not xs:
        return "–"
    mean = sum(xs) / len(xs)
    unit = " %" if pct else ""
    if len(xs) == 1:
        return f"{mean:{fmt}}{unit}"
    return f"{mean:{fmt}}{unit} ({min(xs):{fmt}}–{max(xs):{fmt}})"


def _said(change: dict[str, Any]) -> str:
    return ", ".join(f"`{k}` {_v(a)} → {_v(b)}" for k, (a, b) in change.items()) or "none"


def _v(x: Any) -> str:
    return "unset" if x is None else (f"{x:g}" if isinstance(x, float) else str(x))


def at_round(rows: Sequence[dict[str, Any]], k: int) -> dict[str, Any]:
    """A seed's state at round k: its round k, or its last round when it stopped before."""
    return rows[min(k, len(rows) - 1)]


def case_cured(per_seed: Sequence[dict[str, Any]], ref: float) -> bool:
    """Cured on the seeds' mean: no seed's diagnosis warns, and the means learn as sane does."""
    if any(r.get("crashed") or r["alarms"] for r in per_seed):
        return False
    mean = {m: _mean([r[m] for r in per_seed if r.get(m) is not None])
            for m in ("reward", "entropy", "truncation")}  # fmt: skip
    return learns({"crashed": False, **mean}, ref)


def table(
    results: dict[str, dict[int, list[dict[str, Any]]]], ref: float, seeds: Sequence[int],
    root: Path = LOOP,
) -> str:  # fmt: skip
    """docs/closed-loop.md: one row per case and round, the seeds' spread in each cell."""
    lines = [
        "# Closed loop on the live-fire range",
        "",
        "Written by `scripts/closed_loop.py` (see the README's Live-fire section); do not edit.",
        "Each case of `scripts/live_fire.py` (real TRL `GRPOTrainer` runs on CPU) is trained at",
        f"seeds {', '.join(map(str, seeds))}; each round is diagnosed with the installed CLI",
        "(`rl-advisor diagnose RUN_DIR --format json --patched-config next.yaml`, with",
        "`--previous` naming every earlier round's folder, oldest first)",
        "and the next round trains from `next.yaml`, the patch of the job file the TRL callback",
        "left (`rl-advisor-job.yaml`), as a user resubmits it. Up to 3 rounds after round 0.",
        "",
        "Cured: no seed's diagnosis has a warning or error finding of the run (the config's",
        "static findings are listed apart), and over the seeds' mean the last 20 steps' train",
        f"reward is >= 0.7 x sane's ({ref:.3f}, sane's round 0 at the same seeds), entropy >= 1",
        "and truncation < 10 %, over the seeds the row counts (a seed whose loop ended earlier",
        "is counted at its last round; one whose next round is not trained yet is not).",
        "Cells give the seeds' mean (min–max). Reward, entropy and",
        "truncation: mean of the last 20 training steps; validation: the last evaluation's",
        "reward. Change: what the round trained with against round 0 (the advice applied);",
        "advised: what this round's diagnosis changes in the job file (`next.yaml`). A round",
        "whose job file states the same arguments and seed as a recorded run on the same",
        "reward is that run (seeded CPU training repeats step for step), copied, not retrained.",
        "",
        "| case | round | seeds | trained with | advised | reward | validation | entropy "
        "| truncation | verdict | config findings | cured | train s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    stops: list[str] = []
    for case, per in results.items():
        seeded = [(s, rows) for s, rows in per.items() if rows]
        done = [rows for _, rows in seeded]
        # a seed whose next round is not trained yet says nothing about the rounds after
        final = {s: "not trained yet" not in rows[-1].get("stop", "") for s, rows in seeded}
        if not done:
            lines.append(f"| {case} | – | 0 | not trained yet | | | | | | | | | |")
            continue
        last = max(len(rows) for rows in done)
        for k in range(last):
            seeded_k = [(s, rows) for s, rows in seeded if len(rows) > k or final[s]]
            at = [at_round(rows, k) for _, rows in seeded_k]
            trained = sorted(
                {_said(_against_r0(case, s, at_round(rows, k), k, root)) for s, rows in seeded_k}
            )
            reused = sorted({r["same_as"].split("/")[0] for r in at if r.get("same_as")})
            if reused:  # the same settings and seed as a recorded run: not trained twice
                trained.append(f"(the same run as {', '.join(reused)}'s)")
            advised = sorted({_said(r["change"]) for r in at})
            verdicts = sorted({f"{r['status']}" + (f" {'+'.join(r['alarms'])}" if r["alarms"]
                                                   else "") for r in at})  # fmt: skip
            config = sorted({"+".join(r["config_alarms"]) or "–" for r in at})
            secs = [rows[k]["seconds"] for _, rows in seeded_k if len(rows) > k]
            lines.append(
                f"| {case} | {k} | {len(at)} | {'; '.join(trained)} | {'; '.join(advised)} "
                f"| {_spread([r.get('reward') for r in at])} "
                f"| {_spread([r.get('validation') for r in at])} "
                f"| {_spread([r.get('entropy') for r in at])} "
                f"| {_spread([r.get('truncation') for r in at], '.0f', pct=True)} "
                f"| {'; '.join(verdicts)} | {'; '.join(config)} "
                f"| {'yes' if case_cured(at, ref) else 'no'} "
                f"| {_spread(secs, '.0f')} |"
            )
        why = sorted({rows[-1].get("stop", "?") for rows in done})
        stops.append(f"- {case}: stopped: {'; '.join(why)} ({len(done)} of {len(per)} seeds).")
    times = [r["seconds"] for per in results.values() for rows in per.values() for r in rows
             if "seconds" in r]  # fmt: skip
    lines += ["", "## Why each loop stopped", "", *stops, ""]
    lines += ["## The cases and their known cure", ""]
    for case in results:
        c = LF.BY_NAME[case]
        if c.healthy:
            cure = "healthy: no change should be advised"
        elif c.cure:
            cure = "cured by " + ", ".join(f"`{k}` {_v(v)}" for k, v in c.cure.items())
            if all(LF.BASE.get(k) == v for k, v in c.cure.items()):
                cure += " (sane's value: sane's rounds are the cure's run)"
        else:
            cure = "the reward function is the fault: no setting cures it"
        lines.append(f"- {case}: {c.cause}; {cure}.")
    lines.append("")
    if times:
        lines += [
            "## Training time",
            "",
            f"{len(times)} trainings; seconds per round (wall clock on a shared 2-core machine, "
            f"one or two at a time): mean {sum(times) / len(times):.0f}, min {min(times):.0f}, "
            f"max {max(times):.0f}.",
            "",
        ]
    return "\n".join(lines)


def _against_r0(case: str, seed: int, row: dict[str, Any], k: int, root: Path = LOOP) -> dict:
    """What round k trained with that round 0 did not (the advice applied so far): the two
    rounds' job files as the callback wrote them."""
    if k == 0 or row.get("round", 0) == 0:
        return {}
    a = LF.read_config(round_dir(case, seed, 0, root) / JOB)
    b = LF.read_config(round_dir(case, seed, row["round"], root) / JOB)
    return {k2: (a.get(k2), b.get(k2)) for k2 in sorted(set(a) | set(b)) if a.get(k2) != b.get(k2)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", action="append", choices=sorted(LF.BY_NAME))
    ap.add_argument("--seed", action="append", type=int)
    ap.add_argument("--rounds", type=int, default=ROUNDS, help="Rounds after round 0.")
    ap.add_argument("--root", type=Path, default=LOOP)
    ap.add_argument("--fresh", action="store_true", help="Train recorded rounds again.")
    ap.add_argument(
        "--no-train",
        action="store_true",
        help="Only diagnose what is recorded (and write the table).",
    )
    ap.add_argument(
        "--rediagnose",
        action="store_true",
        help="With --no-train: diagnose every recorded round again (else its diagnosis.json).",
    )
    ap.add_argument("--doc", type=Path, default=DOC)
    ap.add_argument("--no-doc", action="store_true", help="Train and diagnose only.")
    ns = ap.parse_args(argv)
    cases = ns.case or [c.name for c in LF.CASES]
    seeds = ns.seed or list(SEEDS)
    if ns.rounds == 0:  # round 0 only (no sane reference needed): train, diagnose
        for case in cases:
            for seed in seeds:
                d = round_dir(case, seed, 0, ns.root)
                if (ns.fresh or recorded(d) is None) and not ns.no_train:
                    info = train_round(case, seed, 0, ns.root)
                    print(f"{case} s{seed} r0: exit {info['exit']}, {info['seconds']:.0f} s",
                          flush=True)  # fmt: skip
                if recorded(d) is not None and not (d / DIAGNOSIS).is_file():
                    diagnose(d)
        return 0
    ref = sane_reward(SEEDS, ns.root)  # the reference is the standard seed set's, always
    results = {
        case: {seed: loop_seed(
            case, seed, ns.rounds, ref, ns.root, ns.fresh, not ns.no_train, ns.rediagnose
        )
               for seed in seeds}
        for case in cases
    }  # fmt: skip
    if ns.no_doc:
        return 0
    (ns.root / "loop.json").write_text(
        json.dumps({"sane_reward": ref, "seeds": seeds, "results": results}, indent=1) + "\n",
        encoding="utf-8",
    )
    ns.doc.write_text(table(results, ref, seeds, ns.root), encoding="utf-8")
    print(f"wrote {ns.doc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
