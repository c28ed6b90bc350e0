"""An edited shipped rulebook that no longer fits its schema is one line naming the file and the
place, from every loader (a practitioner edits these files without Python)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from advisor.book import config as static
from advisor.book import dialects as dialect
from advisor.book import paramspec
from advisor.resources import rulebook_dir
from advisor.types import InputError


@pytest.fixture
def book_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the shipped rulebook folder the loaders read, with no cache in between."""
    copy = tmp_path / "rulebook"
    shutil.copytree(rulebook_dir(), copy)
    monkeypatch.setenv("RL_ADVISOR_NO_CACHE", "1")
    monkeypatch.setattr(static, "rulebook_dir", lambda: copy)
    monkeypatch.setattr(dialect, "rulebook_dir", lambda: copy)
    static.rulebook.cache_clear()
    dialect.dialects.cache_clear()
    yield copy
    static.rulebook.cache_clear()
    dialect.dialects.cache_clear()


def _spoil(path: Path, line_start: str, extra: str) -> None:
    """Append `extra` inside the first flow mapping on the line starting with `line_start`."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    for i, line in enumerate(lines):
        if line.startswith(line_start):
            head, _, tail = line.rstrip("\n").rpartition("}")
            lines[i] = f"{head}, {extra}}}{tail}\n"
            break
    else:
        raise AssertionError(f"no line starts with {line_start!r} in {path}")
    path.write_text("".join(lines), encoding="utf-8")


def _one_line(err: pytest.ExceptionInfo[InputError], path: Path, *place: str) -> None:
    text = str(err.value)
    assert "\n" not in text and text.startswith(f"{path}: ")
    for word in place:
        assert word in text


def test_config_rulebook(book_dir: Path) -> None:
    path = book_dir / "config.yaml"
    _spoil(path, "  algorithm: {", "bogus: 1")
    with pytest.raises(InputError) as err:
        static.rulebook()
    _one_line(err, path, "hyper_parameters.algorithm.bogus", "not permitted")


def test_dialect_book(book_dir: Path) -> None:
    path = book_dir / "dialects.yaml"
    text = path.read_text(encoding="utf-8")
    path.write_text(text + "\nbogus_section: 1\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        dialect.dialects()
    _one_line(err, path, "bogus_section", "not permitted")


def test_detector_book(tmp_path: Path) -> None:
    path = tmp_path / "detectors.yaml"
    text = paramspec.spec_path().read_text(encoding="utf-8")
    path.write_text(text + "\nbogus_section: 1\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        paramspec.detector_book(path)
    _one_line(err, path, "bogus_section", "not permitted")
