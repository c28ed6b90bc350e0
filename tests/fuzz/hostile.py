"""Hostile inputs for rl-advisor: mutated files of every format it reads, bombs, junk folders,
markup in names and values, hostile output paths.

`make_case(rng, root)` writes one case under `root` and returns its description (a `Case`);
`check(case, result)` says which classes of failure it shows. The runner (`run.py`) and the
quick test (`test_fuzz_quick.py`) share both, so the counts the long run prints are the ones
the suite keeps at zero.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import sqlite3
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "ingest" / "fixtures"
CORPUS = REPO / "sample_metrics" / "corpus"

MARK = "ZQX"  # every markup payload carries it, so the report checker can find where it landed
PAYLOADS = (
    f"<img src=x onerror=alert(1)>{MARK}",
    f"<b>{MARK}</b>",
    f"[{MARK}](http://x.invalid/a)",
    f"![{MARK}](http://x.invalid/a.png)",
    f"**{MARK}**",
    f"_{MARK}_",
    f"~~{MARK}~~",
    f"`` {MARK} ` x",
    f"a|{MARK}|b",
    f"a\\|{MARK}\\",
    f"x\n# {MARK}",
    f"x\r\n\r\n# {MARK}",
    f"```\n# {MARK}\n```",
    f"<!-- {MARK} -->",
    f"<https://x.invalid/{MARK}>",
    f"&lt;{MARK}&#124;",
    f"# {MARK}",
    f"- {MARK}",
    f"1. {MARK}",
    f"> {MARK}",
)
CLASSES = (
    "tracebacks",
    "hangs",
    "memory blowups",
    "changed inputs",
    "partial outputs",
    "injections",
    "contract breaches",
)


@dataclass
class Case:
    kind: str  # the generator that made it
    argv: list[str]  # the CLI call
    api: list[Any] | None = None  # ["diagnose", metrics, config, sets] / ["validate", job, sets]
    inputs: list[str] = field(default_factory=list)  # paths that must not change
    outputs: list[str] = field(default_factory=list)  # paths the call may write
    report: str | None = None  # where the Markdown report goes (checked for injected markup)
    markup: bool = False  # a payload was planted: check the report for it
    blame: str | None = None  # a refusal (exit 2) must name this path
    through: bool = False  # outputs a CLI tool writes through (/dev/null, stdout): exit 0/1
    absent: list[str] = field(default_factory=list)  # paths the call must not create

    def to_json(self) -> str:
        return json.dumps(self.__dict__)


# ----------------------------------------------------------------------------- seeds
def seed_files() -> list[Path]:
    """One file of every text format the readers know, plus a few corpus runs."""
    seeds = sorted(p for p in FIXTURES.iterdir() if p.is_file())
    runs = sorted(p for p in CORPUS.iterdir() if p.is_dir())
    for run in runs[::13]:
        seeds += sorted(f for f in run.iterdir() if f.is_file() and f.name != "label.json")
    return seeds


def job_seed() -> str:
    return (CORPUS / "p1-stall-verl-console-s0001" / "job.yaml").read_text()


# ----------------------------------------------------------------------------- mutators
def _mutate_bytes(rng: random.Random, data: bytes) -> bytes:
    ops = rng.randint(1, 4)
    buf = bytearray(data)
    for _ in range(ops):
        op = rng.randrange(9)
        pos = rng.randrange(len(buf) + 1) if buf else 0
        if op == 0 and buf:  # flip bytes
            for _ in range(rng.randint(1, 8)):
                buf[rng.randrange(len(buf))] = rng.randrange(256)
        elif op == 1:  # truncate
            del buf[pos:]
        elif op == 2:  # duplicate a slice
            end = min(len(buf), pos + rng.randint(1, 4000))
            buf[pos:pos] = buf[pos:end] * rng.randint(1, 5)
        elif op == 3:  # insert a hostile token
            buf[pos:pos] = rng.choice(_TOKENS)
        elif op == 4:  # delete a slice
            del buf[pos : pos + rng.randint(1, 200)]
        elif op == 5:  # swap lines
            lines = bytes(buf).split(b"\n")
            rng.shuffle(lines)
            buf = bytearray(b"\n".join(lines))
        elif op == 6:  # CRLF / CR mix
            buf = bytearray(bytes(buf).replace(b"\n", rng.choice([b"\r\n", b"\r", b"\n\n"]), 50))
        elif op == 7:  # numbers made huge or odd
            text = bytes(buf)
            for old in (b"0.", b"1", b"2", b"5"):
                text = text.replace(old, rng.choice(_NUMBERS), rng.randint(1, 30))
            buf = bytearray(text)
        else:  # a deep value
            buf[pos:pos] = _deep(rng).encode()
    return bytes(buf)


_NUMBERS = [
    b"1" * 400,
    b"9" * 5000,
    b"1e999",
    b"-1e308",
    b"NaN",
    b"Infinity",
    b"-0",
    b"18446744073709551616",
    b"9223372036854775808",
    b"1e20",
    b"0x10",
    b"1_000",
]
_TOKENS = [
    b"\x00",
    b"\xff\xfe",
    b"\xed\xa0\x80",  # an encoded lone surrogate
    b"\\ud800",
    b'"\\udc00"',
    b"\x1b[31m",
    b"step:18446744073709551617 - critic/rewards/mean:0.1\n",
    b"step:-5 - critic/rewards/mean:nan\n",
    b"step:1000000000000 - critic/rewards/mean:0.2\n",
    b'{"step": 1e20, "reward": 1}\n',
    b'{"step": "x", "reward": [1]}\n',
    b"Traceback (most recent call last):\nRuntimeError: <b>ZQX</b> fail\n",
    b"torch.OutOfMemoryError: CUDA out of memory `ZQX` | x\n",
    *(p.encode() for p in PAYLOADS),
]


def _deep(rng: random.Random) -> str:
    n = rng.choice([50, 400, 1000, 5000, 100_000])
    kind = rng.randrange(3)
    if kind == 0:
        return "[" * n + "]" * n
    if kind == 1:
        return '{"a":' * n + "1" + "}" * n
    return "[" * n  # never closed


def _deep_among_records(rng: random.Random) -> str:
    """A JSONL file of good records with one line nested 400-1,000 levels deep (objects or
    arrays), among the first records (which a reader infers its schema from) or after them."""
    n = rng.choice([400, 700, 1000])
    deep = '{"a":' * n + "1" + "}" * n if rng.random() < 0.7 else "[" * n + "]" * n
    before = rng.choice([0, 5, 99, 150])
    rows = [json.dumps({"step": s, "reward": 0.01 * s}) for s in range(1, before + 1)]
    rows.append(json.dumps({"step": before + 1, "reward": 0.5})[:-1] + ', "x": ' + deep + "}")
    rows += [json.dumps({"step": s, "reward": 0.01 * s}) for s in range(before + 2, before + 30)]
    return "\n".join(rows) + "\n"


# ----------------------------------------------------------------------------- bombs / jobs
def _yaml_bomb(levels: int = 9) -> str:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    prev = "a"
    for i in range(levels):
        name = chr(ord("b") + i)
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
        prev = name
    return "\n".join(lines) + "\ntraining:\n  hyper_parameters:\n    learning_rate: *" + prev + "\n"


def hostile_jobs(rng: random.Random) -> str:
    """A job file that is wrong in one of the ways users (and attackers) write them."""
    base = job_seed()
    choice = rng.randrange(20)
    if choice == 0:
        return _yaml_bomb()
    if choice == 1:
        depth = rng.choice([200, 1000, 3000])
        return "\n".join(f"{'  ' * i}k{i}:" for i in range(depth)) + " 1"
    if choice == 2:
        return "training:\n  hyper_parameters:\n    max_length: " + "9" * rng.choice(
            [30, 400, 5000]
        )
    if choice == 3:
        return "? !!pairs [a: 1]\n: 2\n"
    if choice == 4:
        return "training:\n  hyper_parameters: [1, 2]\n"
    if choice == 5:
        return base.replace("\n", "\r\n", 10)[: rng.randrange(len(base))]
    if choice == 6:
        return base.replace("kl_loss_coef", "kl_loss_coef\ud800", 1)
    if choice == 7:
        keys = "\n".join(f"    unknown_key_{i}: {i}" for i in range(rng.choice([2000, 20000])))
        return "training:\n  hyper_parameters:\n" + keys + "\n"
    if choice == 8:
        return "client.run(hyper_parameters={(1, 2): 3, 'learning_rate': 1e-6})\n"
    if choice == 9:
        return json.dumps({"a": 1})
    if choice == 10:
        return (FIXTURES / "trainer_state.json").read_text()
    if choice == 11:
        payload = rng.choice(PAYLOADS)
        return base.replace(
            "lr_scheduler_type", json.dumps(payload)[1:-1].replace(":", "") or "x", 1
        )
    if choice == 12:
        payload = json.dumps(rng.choice(PAYLOADS))
        return base.replace('"linear"', payload, 1).replace('"p1-stall', payload[:-1] + "p1", 1)
    if choice == 13:
        return base + "    extra: |\n      ```\n      # " + MARK + "\n      ```\n"
    if choice == 14:
        return "[" * 100_000
    if choice == 15:
        return "training:\n  hyper_parameters:\n    learning_rate: !!python/object:os.system x\n"
    if choice == 16:
        return base.replace("5e-06", "5e-05")
    if choice == 17:
        return base.replace("n_rollouts: 4", "n_rollouts: 1")
    if choice == 18:
        return "- 1\n- 2\n"
    return _mutate_bytes(rng, base.encode()).decode("utf-8", errors="surrogateescape")


def _job_dict() -> dict[str, Any]:
    """The seed job as data (the generator's job files are flat YAML: two levels read here)."""
    hp: dict[str, Any] = {}
    for line in job_seed().split("hyper_parameters:\n", 1)[1].splitlines():
        if not line.startswith("    "):
            break
        key, _, value = line.strip().partition(": ")
        hp[key] = json.loads(value) if value[:1] in '"-0123456789' else value
    return {"job_name": "p1", "model": "qwen3.5-9b", "training": {"hyper_parameters": hp}}


def patch_job(rng: random.Random, root: Path) -> Path:
    """A job file handed to --config with --patched-config: one the patch writer must copy
    (a 5,000-digit number, a lone surrogate in a key, CRLF lines cut short) or one that is
    no readable job file at all (a pipe, an endless device, a folder, binary, a log)."""
    choice = rng.randrange(9)
    job = root / rng.choice(["job.yaml", "job.json"])
    if choice == 0:  # a number past the integer conversion limit
        doc = _job_dict()
        doc["training"]["hyper_parameters"]["learning_rate"] = "@"
        text = json.dumps(doc).replace('"@"', "9" * rng.choice([4301, 5000, 20000]))
        job = job.with_suffix(rng.choice([".json", ".yaml"]))
        job.write_text(text)
    elif choice == 1:  # a key holding a lone surrogate, escaped in JSON
        doc = _job_dict()
        doc["training"]["hyper_parameters"][rng.choice(["kl_loss_coef\ud800", "x\udfff"])] = 1
        job.write_text(json.dumps(doc, indent=rng.choice([None, 2])))
    elif choice == 2:  # CRLF lines, cut anywhere (often just after a `-`)
        text = job_seed().replace("\n", "\r\n", rng.choice([10, -1]))
        cut = text.index("-", text.index("datasets")) + 1 if rng.random() < 0.4 else None
        job = root / "job.yaml"
        job.write_bytes(text[: cut or rng.randrange(1, len(text))].encode())
    elif choice == 3:
        os.mkfifo(job)
    elif choice == 4:
        job.symlink_to(rng.choice(["/dev/zero", "/dev/urandom"]))
    elif choice == 5:
        job.mkdir()
    elif choice == 6:
        job.write_bytes(os.urandom(rng.randint(1, 3000)))
    elif choice == 7:
        job.write_bytes((CORPUS / "p1-stall-verl-console-s0001" / "train.log").read_bytes())
    else:
        _write_text(job, hostile_jobs(rng))
    return job


def _write_text(path: Path, text: str) -> None:
    path.write_bytes(text.encode("utf-8", errors="surrogatepass"))


# ----------------------------------------------------------------------------- stores
def mlflow_db(path: Path, rng: random.Random, name: str = "run") -> None:
    con = sqlite3.connect(path)
    if rng.random() < 0.5:
        con.execute("PRAGMA journal_mode=WAL")
    con.executescript(
        "CREATE TABLE runs (run_uuid TEXT, name TEXT, status TEXT, start_time INTEGER,"
        " lifecycle_stage TEXT);"
        "CREATE TABLE metrics (key TEXT, value REAL, timestamp INTEGER, step INTEGER,"
        " is_nan INTEGER, run_uuid TEXT);"
        "CREATE TABLE params (key TEXT, value TEXT, run_uuid TEXT);"
    )
    con.execute("INSERT INTO runs VALUES ('r1', ?, 'FAILED', 1, 'active')", (name,))
    odd = [None, "text", 1e20, -1, b"\x00\x01", 2**62, float("nan")]
    for step in range(1, 40):
        for key in ("critic/rewards/mean", "actor/entropy"):
            k, v, s = key, 0.1 * step, step
            if rng.random() < 0.05:
                k = rng.choice([None, 5, key])
            if rng.random() < 0.05:
                v = rng.choice(odd)
            if rng.random() < 0.05:
                s = rng.choice(odd)
            con.execute("INSERT INTO metrics VALUES (?, ?, ?, ?, 0, 'r1')", (k, v, step, s))
    con.execute(
        "INSERT INTO params VALUES ('actor_rollout_ref.actor.optim.lr', ?, 'r1')",
        (rng.choice(["1e-6", "9" * 500, "[" * 1000, "x"]),),
    )
    con.commit()
    con.close()


def trackio_db(path: Path, rng: random.Random, name: str = "run") -> None:
    con = sqlite3.connect(path)
    if rng.random() < 0.5:
        con.execute("PRAGMA journal_mode=WAL")
    con.executescript(
        "CREATE TABLE metrics (id INTEGER PRIMARY KEY, timestamp TEXT, run_name TEXT,"
        " step INTEGER, metrics TEXT);"
        "CREATE TABLE configs (id INTEGER PRIMARY KEY, run_name TEXT, config TEXT);"
    )
    for step in range(1, 40):
        blob: Any = json.dumps({"train/reward": 0.01 * step, "train/entropy": 0.5})
        s: Any = step
        if rng.random() < 0.08:
            blob = rng.choice(
                [
                    None,
                    5,
                    "[" * 5000,
                    '{"a":' * 2000,
                    "9" * 5000,
                    b"\xff",
                    "[]",
                    '{"train/reward": 1e999}',
                    '{"train/global_step": 1e20}',
                ]
            )
        if rng.random() < 0.05:
            s = rng.choice([None, "x", 1e20, 2**62])
        con.execute(
            "INSERT INTO metrics (timestamp, run_name, step, metrics) VALUES (?,?,?,?)",
            (str(step), rng.choice([name, name, None]), s, blob),
        )
    con.execute(
        "INSERT INTO configs (run_name, config) VALUES (?, ?)",
        (name, rng.choice(['{"learning_rate": 1e-6}', "[" * 3000, "null", '"x"'])),
    )
    con.commit()
    con.close()


# ----------------------------------------------------------------------------- cases
def _hostile_name(rng: random.Random, suffix: str) -> str:
    names = [
        "run`x`",
        "a|b",
        "<b>ZQX</b>",
        "[ZQX](x)",
        "**ZQX**",
        "# ZQX",
        "sp ace",
        "ünï",
        "ZQX_\u202e",
        "ZQX\\",
        "``ZQX``",
    ]
    return rng.choice(names).replace("/", "_") + suffix


def _metrics_case(rng: random.Random, root: Path) -> tuple[Path, bool]:
    """A metrics path (file or folder) written under root; True when a payload was planted."""
    kind = rng.randrange(12)
    seed = rng.choice(seed_files())
    if kind <= 4:  # a mutated seed
        p = root / (_hostile_name(rng, seed.suffix) if rng.random() < 0.3 else seed.name)
        p.write_bytes(_mutate_bytes(rng, seed.read_bytes()))
        return p, MARK in p.name
    if kind == 5:  # a crash line with markup
        p = root / "train.log"
        text = (FIXTURES / "verl_console.log").read_text()
        payload = rng.choice(PAYLOADS).replace("\n", " ")
        p.write_text(text + f"\nRuntimeError: CUDA out of memory {payload}\n")
        return p, True
    if kind == 6:  # a store with odd cells and a marked run name
        p = root / "store.db"
        (mlflow_db if rng.random() < 0.5 else trackio_db)(p, rng, rng.choice(PAYLOADS))
        return p, True
    if kind == 7:  # W&B chart export, a marked run name
        p = root / "chart.csv"
        name = rng.choice(PAYLOADS).replace("\n", " ").replace('"', "'")
        text = (FIXTURES / "wandb_chart.csv").read_text().replace("run-7", name)
        p.write_text(text)
        return p, True
    if kind == 8:  # deep / big JSON documents
        p = root / rng.choice(["m.jsonl", "trainer_state.json", "m.json"])
        body = rng.choice(
            [
                '{"step": 1, "x": ' + _deep(rng) + "}\n",
                '{"step": ' + "9" * 5000 + ', "reward": 1}\n{"step": 2, "reward": 2}\n',
                '{"log_history": [{"step": 1e400, "reward": 1}]}',
                '{"log_history": ' + "[" * 3000 + "]" * 3000 + "}",
                '{"step": 1, "reward": 0.1, "k\\ud800": 1}\n{"step": 2, "reward": 0.2}\n',
                _deep_among_records(rng),
            ]
        )
        p.write_text(body)
        return p, False
    if kind == 9:  # steps that restart often, or jump far
        p = root / "m.jsonl"
        n = rng.choice([2000, 20000])
        if rng.random() < 0.5:
            rows = [{"step": n - i, "reward": 0.1} for i in range(n)]
        else:
            rows = [{"step": s, "reward": 0.1} for s in (1, 2, 3, 10**12, 2**63 - 1)]
        p.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
        return p, False
    if kind == 10:  # a junk folder
        d = root / _hostile_name(rng, "_dir")
        d.mkdir()
        for i in range(rng.randint(0, 6)):
            f = d / f"{i}{rng.choice(['.log', '.json', '.csv', '.jsonl', '.db', ''])}"
            f.write_bytes(os.urandom(rng.randint(0, 300)))
        if rng.random() < 0.5:
            (d / "loop").symlink_to(d / "loop")
        if rng.random() < 0.5:
            (d / "events.out.tfevents.1").symlink_to("/dev/zero")
        if rng.random() < 0.3:
            os.mkfifo(d / "fifo.log")
        return d, MARK in d.name
    # files that are not files
    p = root / rng.choice(["events.out.tfevents.x", "train.log", "m.jsonl", "loop.log"])
    what = rng.randrange(4)
    if what == 0:
        os.mkfifo(p)
    elif what == 1:
        p.symlink_to("/dev/zero")
    elif what == 2:
        p.symlink_to(p)
    else:
        p.symlink_to("/dev/urandom")
    return p, False


def make_case(rng: random.Random, base: Path) -> Case:
    """Inputs go in base/in, outputs in base/out: a folder listing an output changes is not
    an input's."""
    root = base / "in"
    root.mkdir(parents=True, exist_ok=True)
    (base / "out").mkdir()
    pick = rng.random()
    if pick < 0.25:  # a job file through validate
        job = root / rng.choice(["job.yaml", "job.json", "job.py"])
        _write_text(job, hostile_jobs(rng))
        sets = _sets(rng)
        fmt = rng.choice(["markdown", "json"])
        argv = ["validate", str(job), "--format", fmt, *[a for s in sets for a in ("--set", s)]]
        return Case(
            "job",
            argv,
            ["validate", str(job), sets],
            [str(job)],
            markup=fmt == "markdown",
            report="-" if fmt == "markdown" else None,
        )
    if pick < 0.35:  # hostile outputs
        return _output_case(rng, root, base / "out")
    if pick < 0.43:  # a job to patch that is odd or no job
        return _patch_case(rng, root, base / "out")
    metrics, marked = _metrics_case(rng, root)
    config = None
    if rng.random() < 0.4:
        config = root / "job.yaml"
        _write_text(config, hostile_jobs(rng) if rng.random() < 0.4 else job_seed())
    out = base / "out" / "report.md"
    patched = base / "out" / "next.yaml"
    argv = ["diagnose", str(metrics), "--fail-on", "never", "--no-plots"]
    outputs = []
    fmt = rng.choice(["markdown", "markdown", "json"])
    argv += ["--format", fmt]
    if config is not None:
        argv += ["--config", str(config)]
        if rng.random() < 0.5:
            argv += ["--patched-config", str(patched)]
            outputs.append(str(patched))
    if rng.random() < 0.6:
        argv += ["-o", str(out)]
        outputs.append(str(out))
    sets = _sets(rng) if rng.random() < 0.2 else []
    for s in sets:
        argv += ["--set", s]
    inputs = [str(metrics)] + ([str(config)] if config else [])
    cfg = str(config) if config else None
    report = (str(out) if str(out) in outputs else "-") if fmt == "markdown" else None
    return Case(
        "metrics",
        argv,
        ["diagnose", str(metrics), cfg, sets],
        inputs,
        outputs,
        report=report,
        markup=marked or config is not None,
    )


def _sets(rng: random.Random) -> list[str]:
    return rng.sample(
        [
            "learning_rate=1e-6",
            "learning_rate=" + "[" * 2000,
            "max_length=" + "9" * 400,
            "n_rollouts=a\nb",
            "x\ny=1",
            "kl_loss_coef={a: {b: {c: 1}}}",
            "eval_steps=1e400",
            "save_steps=0",
            "job_name=<b>ZQX</b>",
            "=1",
            "learning_rate",
        ],
        rng.randint(1, 2),
    )


def _patch_case(rng: random.Random, root: Path, out: Path) -> Case:
    """A good run with a job file to patch (see patch_job): the patch written whole, or one
    line naming the job file."""
    metrics = root / "train.log"
    metrics.write_bytes((CORPUS / "p1-stall-verl-console-s0001" / "train.log").read_bytes())
    job = patch_job(rng, root)
    patched = out / "next.yaml"
    report = out / "report.md"
    fmt = rng.choice(["markdown", "json"])
    argv = ["diagnose", str(metrics), "--config", str(job), "--patched-config", str(patched),
            "--fail-on", "never", "--no-plots", "--format", fmt]  # fmt: skip
    outputs = [str(patched)]
    if rng.random() < 0.5:
        argv += ["-o", str(report)]
        outputs.append(str(report))
    readable = job.is_file() and not job.is_symlink()
    return Case(
        "patch",
        argv,
        ["diagnose", str(metrics), str(job), []] if readable else None,
        [str(metrics), str(job)],
        outputs,
        blame=str(job),
    )


def _output_case(rng: random.Random, root: Path, out: Path) -> Case:
    """A good run and job with an output path that must be refused or written whole."""
    run = CORPUS / "p1-stall-verl-console-s0001"
    metrics = root / "train.log"
    metrics.write_bytes((run / "train.log").read_bytes())
    config = root / "job.yaml"
    config.write_bytes((run / "job.yaml").read_bytes())
    good = out / "report.md"
    what = rng.randrange(12)
    bad: Path
    through = what in (0, 1, 8, 9)  # the null device and stdout are written through
    absent: list[str] = []
    if what == 8:  # the null device named as the machine's own (a private node: a fault
        # that replaced it would break no one else's /dev/null)
        bad = root / "dev" / "null"
        bad.parent.mkdir()
        os.mknod(bad, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    elif what == 9:
        bad = root / "stdout.md"
        bad.symlink_to(rng.choice(["/dev/stdout", "/proc/self/fd/1", "/dev/fd/1"]))
    elif what == 10:  # a link to nothing: refused, the link kept and nothing made
        target = root / rng.choice(["gone.md", "gone/x.md"])
        bad = root / "dangling.md"
        bad.symlink_to(target)
        absent.append(str(target))
    elif what == 11:  # a link to a link to nothing
        (root / "mid.md").symlink_to(root / "gone.md")
        bad = root / "dangling.md"
        bad.symlink_to(root / "mid.md")
        absent.append(str(root / "gone.md"))
    elif what == 0:  # a character device (the null device's numbers), made here, not /dev/null
        bad = root / "nulldev"
        os.mknod(bad, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    elif what == 1:
        bad = root / "devlink"
        bad.symlink_to("/dev/null")
    elif what == 2:
        bad = root / "adir"
        bad.mkdir()
    elif what == 3:
        bad = root / "ro" / "x.md"
        bad.parent.mkdir()
        bad.parent.chmod(0o555)
        bad = root / "ro" / "sub\x01" / "x.md" if rng.random() < 0.2 else bad
    elif what == 4:
        bad = root / "notadir" / "x.md"
        (root / "notadir").write_text("a file")
    elif what == 5:
        bad = root / "loop.md"
        bad.symlink_to(bad)
    elif what == 6:
        bad = root / "fifo.md"
        os.mkfifo(bad)
    else:
        bad = Path("/proc/version") if rng.random() < 0.5 else root / ("n" * 300 + ".md")
    argv = ["diagnose", str(metrics), "--config", str(config), "--fail-on", "never"]
    which = rng.randrange(4)
    if which == 0:
        argv += ["-o", str(bad), "--patched-config", str(good)]
    elif which == 1:
        argv += ["-o", str(good), "--patched-config", str(bad)]
    elif which == 2:
        argv += ["--plots-dir", str(bad), "-o", str(good)]
        through = False  # pictures go into a folder: a device is no place for them
    else:  # the job in the SDK's layout
        argv = ["validate", str(config), "--convert-to", "sdk", "--output", str(bad)]
    # What the call must leave as it was: the bad path, unless it is a place output may go
    # (a folder as --plots-dir; the 0555 folder, which root may write to; /proc, whose
    # listing changes with every process started)
    may_write = what == 3 or (what == 2 and which == 2) or bad.is_relative_to("/proc")
    kept = [str(bad)] if os.path.lexists(bad) and not may_write else []
    return Case(
        "output",
        argv,
        None,
        [str(metrics), str(config), *kept],
        [str(good), str(good.with_suffix(".yaml"))],
        report=None,
        blame=None if through else str(bad),
        through=through,
        absent=absent,
    )


# ----------------------------------------------------------------------------- checks
def snapshot(paths: list[str]) -> dict[str, Any]:
    """Content, mode and kind of each input, and the listing of its folder."""
    out: dict[str, Any] = {}
    for raw in paths:
        p = Path(raw)
        for q in [p, p.parent]:
            try:
                st = os.lstat(q)
            except OSError:
                out[str(q)] = None
                continue
            entry: list[Any] = [stat.S_IFMT(st.st_mode), st.st_mode & 0o7777]
            if stat.S_ISREG(st.st_mode):
                entry += [st.st_size, _digest(q)]
            elif stat.S_ISDIR(st.st_mode):
                with contextlib.suppress(OSError):
                    entry.append(sorted(os.listdir(q)))
            elif stat.S_ISCHR(st.st_mode):
                entry.append(st.st_rdev)
            out[str(q)] = entry
    return out


def _digest(p: Path) -> str:
    import hashlib

    try:
        return hashlib.sha256(p.read_bytes()).hexdigest()
    except OSError:
        return "?"


def injected(text: str) -> list[str]:
    """Where a payload became live markup in a Markdown report: HTML, a link or image to the
    payload's address, emphasis, a heading or list item of its own, a table row that grew
    cells, a fence that ended early."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark").enable(["table", "strikethrough"])
    found: list[str] = []
    tokens = md.parse(text)
    open_: list[str] = []
    header_cells = None
    row_cells = 0
    for t in tokens:
        if t.type.startswith("html"):
            found.append(f"html block {t.content[:40]!r}")
        if t.type == "thead_open":
            header_cells = 0
        if t.type == "th_open" and header_cells is not None:
            header_cells += 1
        if t.type == "tr_open":
            row_cells = 0
        if t.type == "td_open":
            row_cells += 1
        if t.type == "tr_close" and header_cells and row_cells and row_cells != header_cells:
            found.append(f"table row of {row_cells} cells under a header of {header_cells}")
        if t.type.endswith("_open"):
            open_.append(t.type)
        elif t.type.endswith("_close") and open_:
            open_.pop()
        if t.type == "inline" and MARK in t.content:
            if "heading_open" in open_ and any(
                c.type == "text" and MARK in c.content for c in t.children or []
            ):
                found.append(f"heading {t.content[:40]!r}")
            # a list item is fine; one that is the payload alone is not
            in_list = "bullet_list_open" in open_ or "ordered_list_open" in open_
            if in_list and t.content.strip().startswith(MARK) and len(t.content.strip()) < 10:
                found.append(f"list item {t.content[:40]!r}")
            inline: list[str] = []
            for child in t.children or []:
                if child.type.startswith("html"):
                    found.append(f"inline html {child.content[:40]!r}")
                if child.type in ("link_open", "image"):
                    href = str(child.attrs.get("href") or child.attrs.get("src") or "")
                    if "x.invalid" in href or MARK in href:
                        found.append(f"{child.type} {href[:40]!r}")
                if child.type.endswith("_open"):
                    inline.append(child.type)
                elif child.type.endswith("_close") and inline:
                    inline.pop()
                elif child.type == "text" and MARK in child.content:
                    live = [
                        o for o in inline if o in ("strong_open", "em_open", "s_open", "link_open")
                    ]
                    if live:
                        found.append(f"{live[-1]} around {child.content[:40]!r}")
    return found
