"""A 429 or 503 with a Retry-After header, against the loopback HTTP server: the next try waits
what the server asked (delay-seconds or an HTTP date) instead of the backoff, up to
`retry_after_max`, and close() still cuts the wait short."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime, formatdate
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from advisor.alerts import RETRY_AFTER_MAX, Alerter, Channel, load_config, retry_after
from advisor.types import InputError

from .conftest import Endpoint
from .test_delivery import finding


def send(endpoint: Endpoint, lines: list[str], **kw: object) -> Alerter:
    opts: dict[str, object] = {"timeout": 2.0, "run": "run-7"} | kw
    a = Alerter([Channel("webhook", url=endpoint.url)], say=lines.append, **opts)  # type: ignore[arg-type]
    a(finding())
    return a


def gaps(endpoint: Endpoint) -> list[float]:
    return [t1 - t0 for t0, t1 in zip(endpoint.times, endpoint.times[1:], strict=False)]


def test_a_429_waits_the_seconds_the_server_asks_not_the_backoff(endpoint: Endpoint) -> None:
    endpoint.script = [(429, {"Retry-After": "1"})]
    lines: list[str] = []
    a = send(endpoint, lines, backoff=0.01)
    a.close()
    assert len(endpoint.wait(1)) == 1 and endpoint.attempts == 2
    [gap] = gaps(endpoint)
    assert 1.0 <= gap < 6  # the server's second, not the 0.01 s backoff
    assert lines == [
        "rl-advisor: alert P2 (fired) to webhook failed (attempt 1): OSError: HTTP 429 "
        "(Retry-After 1 s); retrying in 1 s"
    ]
    assert a.stats.sent == 1 and a.stats.retried == 1


def test_a_503_asking_for_no_wait_is_retried_at_once(endpoint: Endpoint) -> None:
    endpoint.script = [(503, {"Retry-After": "0"}), (503, {"Retry-After": "0"})]
    lines: list[str] = []
    a = send(endpoint, lines, backoff=30.0)  # the backoff would hold the tries 30 and 60 s
    t0 = time.monotonic()
    a.close(timeout=20)
    assert time.monotonic() - t0 < 5
    assert len(endpoint.wait(1)) == 1 and endpoint.attempts == 3
    assert all(line.endswith("retrying in 0 s") for line in lines) and len(lines) == 2


def test_an_http_date_is_waited_until(endpoint: Endpoint) -> None:
    # whole seconds: two from now is between one and two seconds away
    when = formatdate(time.time() + 2, usegmt=True)
    endpoint.script = [(429, {"Retry-After": when})]
    lines: list[str] = []
    a = send(endpoint, lines, backoff=0.01)
    a.close()
    assert len(endpoint.wait(1)) == 1
    [gap] = gaps(endpoint)
    assert 0.9 <= gap < 8
    assert "(Retry-After " in lines[0] and "; retrying in " in lines[0]


def test_a_long_wait_is_capped(endpoint: Endpoint) -> None:
    endpoint.script = [(429, {"Retry-After": "3600"})]
    lines: list[str] = []
    a = send(endpoint, lines, backoff=0.01, retry_after_max=0.5)
    a.close()
    assert len(endpoint.wait(1)) == 1
    [gap] = gaps(endpoint)
    assert 0.5 <= gap < 10  # not the hour asked
    assert lines == [
        "rl-advisor: alert P2 (fired) to webhook failed (attempt 1): OSError: HTTP 429 "
        "(Retry-After 3600 s); retrying in 0.5 s (the longest wait allowed)"
    ]


def test_an_unreadable_header_or_another_status_falls_back_to_the_backoff(
    endpoint: Endpoint,
) -> None:
    endpoint.script = [(429, {"Retry-After": "soon"}), (500, {"Retry-After": "120"})]
    lines: list[str] = []
    a = send(endpoint, lines, backoff=0.05)
    a.close()
    assert len(endpoint.wait(1)) == 1 and endpoint.attempts == 3
    first, second = gaps(endpoint)
    assert 0.05 <= first < 5 and 0.1 <= second < 5  # 1x, 2x the backoff; not the 120 s
    assert lines == [
        "rl-advisor: alert P2 (fired) to webhook failed (attempt 1): OSError: HTTP 429; retrying",
        "rl-advisor: alert P2 (fired) to webhook failed (attempt 2): OSError: HTTP 500; retrying",
    ]


def test_close_cuts_a_long_wait_short(endpoint: Endpoint) -> None:
    endpoint.script = [(503, {"Retry-After": "3600"}), (503, {"Retry-After": "3600"})]
    lines: list[str] = []
    a = send(endpoint, lines, retry_after_max=3600)
    t0 = time.monotonic()
    a(finding("P3"))  # the caller never waits, whatever the server asked
    assert time.monotonic() - t0 < 0.05
    time.sleep(0.3)
    t0 = time.monotonic()
    a.close(timeout=4)
    assert time.monotonic() - t0 < 4.5  # bounded by close's timeout, not by the hour asked
    # P2 got one last try at once (refused again: given up), then P3 went through
    assert [b["id"] for b in endpoint.wait(1)] == ["P3"]
    assert a.stats.failed == 1 and a.stats.sent == 1
    assert lines[-1].endswith("giving up")


@given(st.integers(min_value=0, max_value=10**9))
def test_delay_seconds_are_read_as_said(n: int) -> None:
    assert retry_after(str(n)) == n
    assert retry_after(f" {n} ") == n


@given(
    st.datetimes(min_value=datetime(1990, 1, 1), max_value=datetime(2200, 1, 1)),
    st.datetimes(min_value=datetime(1990, 1, 1), max_value=datetime(2200, 1, 1)),
)
def test_an_http_date_is_the_seconds_from_now_to_it(when: datetime, now: datetime) -> None:
    when, now = when.replace(microsecond=0, tzinfo=UTC), now.replace(tzinfo=UTC)
    for said in (format_datetime(when, usegmt=True), format_datetime(when)):
        got = retry_after(said, now=now.timestamp())
        assert got == pytest.approx(max(0.0, (when - now) / timedelta(seconds=1)), abs=1e-6)


@given(st.text(max_size=40))
def test_any_header_gives_a_wait_or_none_never_an_error(text: str) -> None:
    got = retry_after(text, now=0.0)
    assert got is None or 0 <= got < float("inf")


def test_unreadable_values() -> None:
    for bad in (None, "", "soon", "-5", "1e3", ".", "1.2.3", "9" * 400):
        assert retry_after(bad) is None, bad
    assert retry_after("1.5") == 1.5  # a fraction, as some chat services send


def test_the_cap_from_a_settings_file(tmp_path: Path) -> None:
    f = tmp_path / "alerts.yaml"
    f.write_text("channels: [{kind: webhook}]\nretry_after_max: 15\n")
    env = {"RL_ADVISOR_WEBHOOK_URL": "https://hooks.example/x"}
    kwargs = load_config(f, env)
    assert kwargs is not None and kwargs["retry_after_max"] == 15
    f.write_text("channels: [{kind: webhook}]\n")
    kwargs = load_config(f, env)
    assert kwargs is not None and kwargs["retry_after_max"] == RETRY_AFTER_MAX
    f.write_text("channels: [{kind: webhook}]\nretry_after_max: -1\n")
    with pytest.raises(InputError, match=r"alerts\.yaml: alerts: retry_after_max: .*greater"):
        load_config(f, env)
