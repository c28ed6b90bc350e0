"""The envelope reader (advisor.ingest.envelope) as a parser: any log, as a string or a list of
lines, in any of the envelopes, laid out compact or indented, comes back as its text without
its colour codes; a JSON document that is no envelope is left to the other readers."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.ingest import envelope
from advisor.types import InputError

_ANSI = st.sampled_from(["\x1b[36m", "\x1b[0m", "\x1b[1;31m", "\x1b]0;title\x07"])
_PIECE = st.one_of(
    st.text(
        alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x1b\n\r"),
        max_size=30,
    ),
    _ANSI,
)
_LINE = st.lists(_PIECE, max_size=6).map("".join)
_LINES = st.lists(_LINE, min_size=1, max_size=30).filter(
    lambda ls: any(
        re.sub(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07\x1b]*\x07", "", x).strip() for x in ls
    )
)
_STRIP = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")


def _wrap(kind: str, logs: Any) -> dict[str, Any]:
    if kind == "cli":
        return {"job_id": "ft-1", "logs": logs}
    if kind == "v2":
        return {"request_id": "r", "status_code": 200, "is_error": False, "headers": {},
                "job_id": "ft-1", "content": logs}  # fmt: skip
    return {"request_id": "r", "output": {"total": 5, "logs": logs}}


@settings(max_examples=200, deadline=None)
@given(
    lines=_LINES,
    as_list=st.booleans(),
    kind=st.sampled_from(["cli", "v2", "service"]),
    indent=st.sampled_from([None, 2]),
    ascii_only=st.booleans(),
)
def test_any_log_comes_back_as_its_text(
    lines: list[str], as_list: bool, kind: str, indent: int | None, ascii_only: bool
) -> None:
    logs: Any = lines if as_list else "\n".join(lines)
    text = json.dumps(_wrap(kind, logs), indent=indent, ensure_ascii=ascii_only)
    got = envelope.unwrap(Path("logs.json"), text)
    assert got is not None
    body, what, _ = got
    want = "\n".join(lines) + ("\n" if as_list else "")
    assert body == _STRIP.sub("", want) and "\x1b[" not in body
    assert ("`output.logs`" in what) == (kind == "service")


@given(extra=st.text(min_size=1, max_size=10).filter(lambda k: k not in envelope._ENVELOPE_KEYS))
def test_a_document_with_other_keys_is_no_envelope(extra: str) -> None:
    for doc in ({"logs": "a\nb", extra: 1}, {"log_history": [{"step": 1}], "logs": "x", extra: 0}):
        assert envelope.unwrap(Path("x.json"), json.dumps(doc)) is None
    assert envelope.unwrap(Path("x.json"), json.dumps([{"logs": "a"}])) is None
    assert envelope.unwrap(Path("x.json"), "{not json") is None


def test_an_envelope_of_no_log_is_refused() -> None:
    for logs in ("", [], ["", None], "\x1b[0m\n"):
        with pytest.raises(InputError, match="is empty"):
            envelope.unwrap(Path("x.json"), json.dumps({"job_id": "j", "logs": logs}))
    with pytest.raises(InputError, match="expected the log as a string or a list of lines"):
        envelope.unwrap(Path("x.json"), json.dumps({"job_id": "j", "logs": [1, 2]}))
