"""Unusable input to `validate`: exit 2, one stderr line naming the file (and line), no output."""

from __future__ import annotations

from pathlib import Path

import pytest
from config_helpers import JOBS

from advisor.cli import main

# (file content as bytes, what the one line must say: file:line and the problem)
BAD_FILES = {
    "not_yaml": (b"algorithm: gspo\nbatch_size: [64\nlr: 1\n", "job.yaml:3:"),
    "a_list": (b"- algorithm: gspo\n- batch_size: 64\n", "job.yaml:1: expected a mapping"),
    "a_scalar": (b"just some text\n", "job.yaml:1: expected a mapping"),
    "empty": (b"", "job.yaml:1: empty file"),
    "only_comments": (b"# nothing here\n", "job.yaml:1: empty file"),
    "binary": (b"algorithm: gspo\n\x7fELF\x02\x01\x01\x00\xd0\xff\n", "job.yaml:2: not UTF-8"),
    "latin1": (b"job_name: x\n# caf\xe9\nalgorithm: gspo\n", "job.yaml:2: not UTF-8"),
    "utf16": ("algorithm: gspo\n".encode("utf-16"), "job.yaml:1: saved as UTF-16"),
    "tab_indent": (b"algorithm: gspo\n\tbatch_size: 64\n", "job.yaml:2:"),
    "duplicate_key": (b"algorithm: gspo\nalgorithm: grpo\n", "job.yaml:2:"),
    "two_documents": (b"algorithm: gspo\n---\nbatch_size: 64\n", "a second YAML document"),
}
# a .json file must be JSON (YAML would read `"batch_size": }` as null)
BAD_JSON = {
    "missing_value": (b'{"algorithm": "gspo",\n "batch_size": }\n', "job.json:2:"),
    "trailing_comma": (b'{"algorithm": "gspo",\n "batch_size": 64,\n}\n', "job.json:3:"),
    "single_quotes": (b"{'algorithm': 'gspo'}\n", "job.json:1:"),
    "empty": (b"", "job.json:1: empty file"),
}


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_exit_2(code: int, out: str, err: str, needle: str) -> None:
    assert code == 2, (code, err)
    assert out == "", "nothing may be printed on stdout"
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert needle in err, err


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_unreadable_job_file(capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str) -> None:
    content, needle = BAD_FILES[name]
    path = tmp_path / "job.yaml"
    path.write_bytes(content)
    for fmt in ("markdown", "json"):
        assert_one_line_exit_2(*run(capsys, "validate", str(path), "--format", fmt), needle)
    assert path.read_bytes() == content  # the input is never changed


@pytest.mark.parametrize("name", sorted(BAD_JSON))
def test_unreadable_json_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str
) -> None:
    content, needle = BAD_JSON[name]
    path = tmp_path / "job.json"
    path.write_bytes(content)
    assert_one_line_exit_2(*run(capsys, "validate", str(path), "--format", "json"), needle)


def test_missing_file_and_directory(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    assert_one_line_exit_2(*run(capsys, "validate", str(missing)), "nope.yaml: no such file")
    assert_one_line_exit_2(*run(capsys, "validate", str(tmp_path)), "is a directory")


@pytest.mark.parametrize(
    ("item", "needle"),
    [
        ("learning_rate", "--set learning_rate: expected KEY=VALUE"),
        ("=3", "expected KEY=VALUE"),
        ("learnig_rate=1e-6", "unknown key; did you mean learning_rate?"),
        ("resources.mtu_capcity=3", "did you mean"),
        ("functions.5.runtime.cpu=2", "no index 5"),
        ("learning_rate=[1", "--set learning_rate=[1: value is not a YAML scalar"),
    ],
)
def test_unusable_set(capsys: pytest.CaptureFixture[str], item: str, needle: str) -> None:
    args = ("validate", str(JOBS / "guide_config.yaml"), "--set", item)
    assert_one_line_exit_2(*run(capsys, *args), needle)
