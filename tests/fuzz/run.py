"""The long fuzz run: `python tests/fuzz/run.py --n 10000 [--seed S] [--workers 2]`.

Makes N hostile cases (tests/fuzz/hostile.py), runs each through the API and the CLI in a
worker process (killed past --timeout seconds: a hang; past --max-rss MB: a memory blowup) and
prints how many cases fell in each class of failure, with a few examples of each. Exit 1 when
any count is not zero.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import select
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from hostile import CLASSES, Case, injected, make_case, snapshot  # noqa: E402


def execute(case: Case) -> dict[str, Any]:
    """Run one case in this process; the classes of failure it shows, and what was seen."""
    os.environ.setdefault("RL_ADVISOR_NO_CACHE", "")
    from advisor.types import InputError

    found: dict[str, str] = {}
    before = snapshot(case.inputs)
    start = time.monotonic()
    if case.api is not None:
        try:
            if case.api[0] == "diagnose":
                from advisor.api import diagnose

                diagnose(case.api[1], case.api[2], case.api[3])
            else:
                from advisor.api import validate

                validate(case.api[1], case.api[2])
        except InputError as err:
            if "\n" in str(err) or "\r" in str(err):
                found["contract breaches"] = f"API InputError on several lines: {str(err)[:200]!r}"
        except MemoryError:
            found["memory blowups"] = "MemoryError from the API"
        except RecursionError:
            found["tracebacks"] = "RecursionError from the API"
        except BaseException as err:  # everything else is a traceback a user would see
            found["tracebacks"] = f"API {type(err).__name__}: {str(err)[:200]}"
    from advisor.cli import main

    out, err_text = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err_text):
            code = main(case.argv)
    except MemoryError:
        code = -1
        found["memory blowups"] = "MemoryError from the CLI"
    except BaseException as err:
        code = -1
        found["tracebacks"] = f"CLI {type(err).__name__}: {str(err)[:200]}"
    elapsed = time.monotonic() - start
    stderr, stdout = err_text.getvalue(), out.getvalue()
    if elapsed > 10:
        found["hangs"] = f"{elapsed:.1f} s"
    if "Traceback" in stderr or "internal error" in stderr:
        found["tracebacks"] = stderr.strip()[-300:]
    if code not in (0, 1, 2, -1):
        found["contract breaches"] = f"exit {code}"
    if code == 2:
        lines = [ln for ln in stderr.splitlines() if ln.strip()]
        if len(lines) != 1 and case.argv[0] != "watch":
            found["contract breaches"] = f"exit 2 with {len(lines)} stderr lines: {stderr[:300]!r}"
    json_out = "--format" in case.argv and case.argv[case.argv.index("--format") + 1] == "json"
    if json_out and code in (0, 1) and "-o" not in case.argv:
        try:
            json.loads(stdout)
        except ValueError:
            found["contract breaches"] = f"--format json stdout is not JSON: {stdout[:200]!r}"
    if code == 2 and case.blame and case.blame not in stderr:
        found["contract breaches"] = f"exit 2 without naming {case.blame}: {stderr[:300]!r}"
    if case.through and code not in (0, 1):
        found["contract breaches"] = f"exit {code} writing through: {stderr[:300]!r}"
    made = [a for a in case.absent if os.path.lexists(a)]
    if made:
        found["changed inputs"] = f"made {made[0]}"
    if case.kind == "job" and code == 0 and _not_a_job(case):
        found["contract breaches"] = "validate exit 0 on a file that is not a job"
    after = snapshot(case.inputs)
    changed = [k for k in before if before[k] != after.get(k)]
    if changed:
        found["changed inputs"] = (
            f"{changed[:2]}: {before[changed[0]]!r} -> {after.get(changed[0])!r}"[:300]
        )
    for o in case.outputs:
        p = Path(o)
        if code == 2 and p.exists():
            found["partial outputs"] = f"exit 2 left {o}"
        if p.parent.is_dir():
            temps = [f for f in os.listdir(p.parent) if f.endswith(".tmp")]
            if temps:
                found["partial outputs"] = f"temp files left: {temps[:2]}"
    if code in (0, 1) and case.outputs:
        for o in case.outputs:
            if o.endswith(".md") and o in case.argv and not Path(o).exists():
                found["partial outputs"] = f"exit {code} without {o}"
    if case.markup and case.report and code in (0, 1):
        text = stdout if case.report == "-" else _read(case.report)
        hits = injected(text)
        if hits:
            found["injections"] = "; ".join(hits[:3])
    return {"found": found, "elapsed": elapsed, "code": code}


def _not_a_job(case: Case) -> bool:
    text = _read(case.inputs[0])
    return text.lstrip().startswith(('{"a"', '{\n  "best', "- 1")) or '"log_history"' in text[:3000]


def _read(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


# ----------------------------------------------------------------------------- worker pool
def worker() -> None:
    """Read cases (JSON lines) on stdin, write results (JSON lines) on stdout. A case may write
    to its stdout (a report through /dev/stdout): the results go on a copy of the descriptor,
    and descriptor 1 is a scratch file."""
    real_out = os.fdopen(os.dup(1), "w")
    with tempfile.TemporaryFile() as scratch:
        os.dup2(scratch.fileno(), 1)
        for line in sys.stdin:
            case = Case(**json.loads(line))
            result = execute(case)
            real_out.write(json.dumps(result) + "\n")
            real_out.flush()


class Worker:
    def __init__(self) -> None:
        env = {**os.environ, "POLARS_MAX_THREADS": "1", "RL_ADVISOR_NO_CACHE": ""}
        self.proc = subprocess.Popen(
            [sys.executable, str(HERE / "run.py"), "--worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
            start_new_session=True,
        )
        self.case: Case | None = None
        self.root: Path | None = None
        self.started = 0.0

    def send(self, case: Case, root: Path) -> None:
        self.case, self.root, self.started = case, root, time.monotonic()
        assert self.proc.stdin is not None
        self.proc.stdin.write(case.to_json() + "\n")
        self.proc.stdin.flush()

    def rss_mb(self) -> float:
        try:
            for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        except (OSError, ValueError):
            pass
        return 0.0

    def kill(self) -> None:
        with contextlib.suppress(OSError):
            os.killpg(self.proc.pid, 9)
        self.proc.wait()


def _cleanup(root: Path) -> None:
    for dirpath, dirnames, _ in os.walk(root):
        for d in dirnames:
            with contextlib.suppress(OSError):
                os.chmod(os.path.join(dirpath, d), 0o755)
    shutil.rmtree(root, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=16)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=10.0)
    ap.add_argument("--max-rss", type=float, default=2500.0, help="MB")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--log", type=Path, default=None, help="write every failing case here")
    args = ap.parse_args()
    if args.worker:
        worker()
        return 0
    rng = random.Random(args.seed)
    base = Path(tempfile.mkdtemp(prefix="rl-advisor-fuzz-"))
    counts = {c: 0 for c in CLASSES}
    examples: dict[str, list[str]] = {c: [] for c in CLASSES}
    log = args.log.open("w") if args.log else None
    workers = [Worker() for _ in range(args.workers)]
    made = done = 0
    t0 = time.monotonic()

    def record(case: Case, found: dict[str, str]) -> None:
        for cls, what in found.items():
            counts[cls] += 1
            if len(examples[cls]) < 3:
                examples[cls].append(f"{case.kind}: {' '.join(case.argv)[:160]} -> {what[:240]}")
        if log and found:
            log.write(json.dumps({"argv": case.argv, "found": found}) + "\n")

    try:
        while done < args.n:
            for w in workers:
                if w.case is None and made < args.n:
                    root = base / str(made)
                    case = make_case(rng, root)
                    made += 1
                    w.send(case, root)
            busy = [w for w in workers if w.case is not None]
            ready, _, _ = select.select([w.proc.stdout for w in busy], [], [], 0.05)
            for w in busy:
                assert w.case is not None and w.root is not None
                root = w.root
                if w.proc.stdout in ready:
                    line = w.proc.stdout.readline() if w.proc.stdout else ""
                    if line:
                        record(w.case, json.loads(line)["found"])
                    else:  # the worker died (an abort inside a native library)
                        record(w.case, {"tracebacks": f"worker died: exit {w.proc.poll()}"})
                        w.kill()
                        w.__init__()  # type: ignore[misc]
                elif time.monotonic() - w.started > args.timeout:
                    record(w.case, {"hangs": f"over {args.timeout:g} s"})
                    w.kill()
                    w.__init__()  # type: ignore[misc]
                elif w.rss_mb() > args.max_rss:
                    record(w.case, {"memory blowups": f"RSS over {args.max_rss:g} MB"})
                    w.kill()
                    w.__init__()  # type: ignore[misc]
                else:
                    continue
                _cleanup(root)
                w.case = w.root = None
                done += 1
                if done % 500 == 0:
                    print(f"  {done} cases, {time.monotonic() - t0:.0f} s", file=sys.stderr)
    finally:
        for w in workers:
            w.kill()
        _cleanup(base)
    print(f"{args.n} hostile cases (seed {args.seed}), {time.monotonic() - t0:.0f} s")
    for cls in CLASSES:
        print(f"  {cls:18} {counts[cls]}")
        for ex in examples[cls]:
            print(f"      {ex}")
    return 1 if any(counts.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
