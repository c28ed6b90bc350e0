"""The rulebook YAML cache: an edited file is read afresh; a broken cache only costs time."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel

from advisor.resources import load_validated, read_yaml_data


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("RL_ADVISOR_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("RL_ADVISOR_NO_CACHE", raising=False)
    return tmp_path / "cache"


def test_cache_follows_edits(tmp_path: Path) -> None:
    book = tmp_path / "rules.yaml"
    book.write_text("save_strategy: [steps, epoch, no]\nlr: 1e-6\n", encoding="utf-8")
    first = read_yaml_data(book)
    assert first == {"save_strategy": ["steps", "epoch", "no"], "lr": 1e-6}  # YAML 1.2
    assert read_yaml_data(book) == first  # from the cache
    assert len(list((tmp_path / "cache").glob("rules-*.json"))) == 1
    book.write_text("save_strategy: [steps]\n", encoding="utf-8")
    assert read_yaml_data(book) == {"save_strategy": ["steps"]}


def test_corrupt_cache_is_ignored(tmp_path: Path) -> None:
    book = tmp_path / "rules.yaml"
    book.write_text("a: 1\n", encoding="utf-8")
    read_yaml_data(book)
    for f in (tmp_path / "cache").glob("*.json"):
        f.write_text("{not json", encoding="utf-8")
    assert read_yaml_data(book) == {"a": 1}


def test_unwritable_cache_still_reads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("", encoding="utf-8")
    monkeypatch.setenv("RL_ADVISOR_CACHE_DIR", str(blocker / "sub"))  # a file in the way
    book = tmp_path / "rules.yaml"
    book.write_text("a: [1, 2]\n", encoding="utf-8")
    assert read_yaml_data(book) == {"a": [1, 2]}



class _Book(BaseModel):
    a: list[int]


def test_validated_object_is_cached_and_follows_edits(tmp_path: Path) -> None:
    book = tmp_path / "rules.yaml"
    book.write_text("a: [1, 2]\n", encoding="utf-8")
    calls: list[Path] = []

    def build(path: Path) -> _Book:
        calls.append(path)
        return _Book.model_validate(read_yaml_data(path))

    assert load_validated(book, build, __name__).a == [1, 2]
    assert load_validated(book, build, __name__).a == [1, 2]
    assert len(calls) == 1  # the second came from the pickle
    assert len(list((tmp_path / "cache").glob("rules-*.pickle"))) == 1
    book.write_text("a: [3]\n", encoding="utf-8")
    assert load_validated(book, build, __name__).a == [3]
    assert len(calls) == 2


def test_shipped_rulebook_round_trips_through_the_cache(tmp_path: Path) -> None:
    from advisor import static

    static.rulebook.cache_clear()
    first = static.rulebook()  # validated and pickled
    assert list((tmp_path / "cache").glob("config-*.pickle"))
    static.rulebook.cache_clear()
    again = static.rulebook()  # unpickled
    assert again == first and again is not first
    for f in (tmp_path / "cache").glob("config-*.pickle"):
        f.write_bytes(b"not a pickle")
    static.rulebook.cache_clear()
    assert static.rulebook() == first  # a broken cache is rebuilt
    static.rulebook.cache_clear()


def test_written_files_get_the_usual_mode(tmp_path: Path) -> None:
    """A report is written through a temp file (mkstemp: 0600) but ends with the mode open()
    gives a new file (0666 less the umask), or the mode of the file it replaces."""
    import os
    import stat

    from advisor.resources import write_text_atomic

    old = os.umask(0o022)
    try:
        fresh = tmp_path / "report.md"
        write_text_atomic(fresh, "x")
        assert stat.S_IMODE(fresh.stat().st_mode) == 0o644
        kept = tmp_path / "kept.md"
        kept.write_text("old")
        kept.chmod(0o600)
        write_text_atomic(kept, "new")
        assert stat.S_IMODE(kept.stat().st_mode) == 0o600 and kept.read_text() == "new"
    finally:
        os.umask(old)
