"""A job file is read and parsed once per diagnosis and handed on (config.JobFile): the diff in
the report and the --patched-config copy start from the document the load parsed, and equal
what a fresh read of the file gives."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest
from config_helpers import JOBS
from hypothesis import given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from advisor.cli import main
from advisor.config import load_config, patched_text, read_job_file

ROOT = Path(__file__).resolve().parents[2]
# a P3 run (a KL that climbs) whose advice changes the job's kl_loss_coef
RUN = ROOT / "sample_metrics" / "corpus" / "p3-step-verl-jsonl-s0003"


def test_diagnose_with_a_patched_config_reads_and_parses_the_job_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = tmp_path / "job.yaml"
    job.write_bytes((RUN / "job.yaml").read_bytes())
    text = job.read_text(encoding="utf-8")
    parses, reads = [], []

    real_load, real_compose = YAML.load, YAML.compose

    def counted_load(self: YAML, stream: Any) -> Any:
        if stream == text:
            parses.append(1)
        return real_load(self, stream)

    def counted_compose(self: YAML, stream: Any) -> Any:  # a parse too (to a node tree)
        if stream == text:
            parses.append(1)
        return real_compose(self, stream)

    real_open = Path.open

    def counted_open(self: Path, *args: Any, **kwargs: Any) -> Any:
        if self == job:  # read_text and read_bytes open through it too
            reads.append(1)
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(YAML, "load", counted_load)
    monkeypatch.setattr(YAML, "compose", counted_compose)
    monkeypatch.setattr(Path, "open", counted_open)
    out, patched = tmp_path / "report.json", tmp_path / "patched.yaml"
    argv = [str(RUN / "metrics.jsonl"), "--config", str(job), "--format", "json"]
    with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
        code = main(["diagnose", *argv, "-o", str(out), "--patched-config", str(patched)])
    monkeypatch.undo()

    assert code in (0, 1)
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["patch"]["changes"], "the run's advice changes the job"
    assert report["patch_diff"]  # the diff of the user's file, from the same document
    assert (len(parses), len(reads)) == (1, 1)
    # what was written is what a fresh read of the file patches to
    changes = {c["param"]: c["to"] for c in report["patch"]["changes"]}
    assert patched.read_text(encoding="utf-8") == patched_text(job, changes)


def _job_files() -> list[Path]:
    corpus = sorted((ROOT / "sample_metrics" / "corpus").glob("*/job.yaml"))
    return [*sorted(JOBS.iterdir()), *corpus[:: max(1, len(corpus) // 12)]]


@settings(max_examples=25, deadline=None)
@given(
    path=st.sampled_from(_job_files()),
    lr=st.floats(1e-9, 1e-3, allow_subnormal=False),
    kl=st.sampled_from([0.0, 0.001, 0.04, 0.5]),
)
def test_the_loaded_job_patches_as_a_fresh_read_does(path: Path, lr: float, kl: float) -> None:
    changes = {"learning_rate": lr, "kl_loss_coef": kl}
    loaded = load_config(path)
    assert loaded.file is not None and loaded.file.path == path
    fresh = patched_text(path, changes)
    assert patched_text(loaded.file, changes) == fresh
    # the loaded document is never changed: patching it again gives the same text
    assert patched_text(loaded.file, changes) == fresh
    assert patched_text(loaded.file, {}) == patched_text(read_job_file(path), {})


def test_a_job_without_a_file_has_no_job_file() -> None:
    assert load_config(None).file is None


_PAIRS = list(zip("abcdefg", "bcdefgh", strict=True))  # each alias list nine of the one before


@pytest.mark.parametrize(
    "text",
    [
        # a merge key: constructing the document rewrites its mapping node
        "base: &b\n  learning_rate: 2e-6\ntraining:\n  hyper_parameters:\n    <<: *b\n"
        "    kl_loss_coef: 1e-3\n",
        # aliases repeated past what the walk of the parse follows (the file is refused)
        "a: &a [1e-6, 2e-6, 3e-6]\n"
        + "".join(f"{n}: &{n} [{', '.join([f'*{p}'] * 9)}]\n" for p, n in _PAIRS)
        + "training:\n  hyper_parameters:\n    learning_rate: 1e-6\n",
        "training:\n  hyper_parameters:\n    learning_rate: 0e0\n    n_epochs: 1_0\n",
    ],
)
def test_the_yaml11_texts_found_in_the_parse_equal_a_fresh_composes(
    text: str, tmp_path: Path
) -> None:
    """config.yaml11_texts from the one parse of the file: what composing it afresh finds."""
    from advisor.config import _visit_numbers, yaml11_texts
    from advisor.types import InputError

    job = tmp_path / "job.yaml"
    job.write_text(text, encoding="utf-8")
    try:
        job_file = read_job_file(job)
    except InputError as err:
        assert "aliases expand" in str(err)
        return
    fresh: dict[str, tuple[str, int]] = {}
    _visit_numbers(YAML(typ="rt", pure=True).compose(text), "", fresh)
    assert job_file.yaml11 == fresh and yaml11_texts(job_file) == fresh
