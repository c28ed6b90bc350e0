"""The Alerter against real servers on the loopback: bodies per channel, retries with backoff,
a timeout, a refused connection, the cooldown and the cap, the email path, and secrets that
never reach a log line."""

from __future__ import annotations

import string
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from advisor.alerts import Alerter, Channel, Message, http_body
from advisor.types import Action, Evidence, Finding, InputError, Severity

from .conftest import Endpoint, Sink

SECRET = "T0KEN-s3cr3t-9f8e7d"


def finding(fid: str = "P2", severity: Severity = Severity.warning, **kw: object) -> Finding:
    fields: dict[str, object] = {"onset_step": 120, "detected_step": 140} | kw
    return Finding(
        id=fid,
        name="Entropy collapse",
        severity=severity,
        evidence=[
            Evidence(
                metric="entropy",
                detector="trend",
                window=(100, 140),
                summary="entropy fell from 0.61 to 0.12 over steps 100-140",
            )
        ],
        action=Action(advice="Raise the clip range's upper bound.", safety="unsafe"),
        **fields,  # type: ignore[arg-type]
    )


def alerter(channels: list[Channel], lines: list[str], **kw: object) -> Alerter:
    opts: dict[str, object] = {"backoff": 0.01, "timeout": 2.0, "run": "run-7"} | kw
    return Alerter(channels, say=lines.append, **opts)  # type: ignore[arg-type]


def test_one_webhook_message_per_finding_with_evidence_onset_and_change(
    endpoint: Endpoint,
) -> None:
    lines: list[str] = []
    a = alerter([Channel("webhook", url=endpoint.url + "/hook")], lines)
    a(finding())
    a.close()
    [body] = endpoint.wait(1)
    assert body["event"] == "fired" and body["id"] == "P2" and body["severity"] == "warning"
    assert body["onset_step"] == 120 and body["detected_step"] == 140 and body["run"] == "run-7"
    assert body["evidence"] == ["entropy fell from 0.61 to 0.12 over steps 100-140"]
    assert body["advice"] == "Raise the clip range's upper bound."
    assert "Onset: step 120, seen at step 140." in body["text"]
    assert body["finding"]["id"] == "P2"  # the finding's own JSON, as --on-finding gets it
    assert a.stats.sent == 1 and lines == []


def test_info_findings_are_not_alerted_unless_asked(endpoint: Endpoint) -> None:
    lines: list[str] = []
    quiet = alerter([Channel("webhook", url=endpoint.url)], lines)
    quiet(finding("WASTE", Severity.info))
    quiet.close()
    loud = alerter([Channel("webhook", url=endpoint.url)], lines, min_severity="info")
    loud(finding("WASTE", Severity.info))
    loud.close()
    assert [b["id"] for b in endpoint.wait(1)] == ["WASTE"] and endpoint.attempts == 1


def test_slack_and_discord_bodies(endpoint: Endpoint) -> None:
    slack = Channel("slack", url=endpoint.url)
    body = http_body(slack, Message(finding(name_escape := "P3"), "fired"))
    assert name_escape in body.decode()
    import json

    text = json.loads(http_body(slack, Message(finding(), "fired", advice="a < b & c")))["text"]
    assert "a &lt; b &amp; c" in text  # Slack's three escapes
    role = Channel("discord", url=endpoint.url, role="4242")
    err = json.loads(http_body(role, Message(finding(severity=Severity.error), "fired")))
    assert err["content"].startswith("<@&4242> rl-advisor: ERROR P2")
    assert err["allowed_mentions"] == {"parse": [], "roles": ["4242"]}
    warn = json.loads(http_body(role, Message(finding(), "fired")))
    assert "<@&" not in warn["content"] and warn["allowed_mentions"] == {"parse": []}
    long = finding(severity=Severity.error)
    long.evidence[0].summary = "x" * 5000
    assert len(json.loads(http_body(role, Message(long, "fired")))["content"]) <= 2000


def test_a_500_is_retried_with_backoff_then_delivered(endpoint: Endpoint) -> None:
    endpoint.script = [500, 503]
    lines: list[str] = []
    a = alerter([Channel("webhook", url=endpoint.url)], lines, backoff=0.05)
    t0 = time.monotonic()
    a(finding())
    assert time.monotonic() - t0 < 0.05  # the caller never waits for the network
    a.close()
    assert len(endpoint.wait(1)) == 1 and endpoint.attempts == 3
    assert time.monotonic() - t0 >= 0.05 + 0.1  # waited 1x then 2x the backoff
    assert a.stats.sent == 1 and a.stats.retried == 2 and a.stats.failed == 0
    assert lines == [
        "rl-advisor: alert P2 (fired) to webhook failed (attempt 1): OSError: HTTP 500; retrying",
        "rl-advisor: alert P2 (fired) to webhook failed (attempt 2): OSError: HTTP 503; retrying",
    ]


def test_a_4xx_is_not_retried(endpoint: Endpoint) -> None:
    endpoint.script = [404]
    lines: list[str] = []
    a = alerter([Channel("slack", url=f"{endpoint.url}/services/{SECRET}")], lines)
    a(finding())
    a.close()
    assert endpoint.attempts == 1 and a.stats.failed == 1
    assert lines == ["rl-advisor: alert P2 (fired) to slack webhook failed (attempt 1): HTTP 404; "
                     "giving up"]  # fmt: skip


def test_a_hung_receiver_times_out_and_never_slows_the_caller(endpoint: Endpoint) -> None:
    endpoint.delay = 1.0
    lines: list[str] = []
    a = alerter([Channel("webhook", url=endpoint.url)], lines, timeout=0.2, retries=1)
    t0 = time.monotonic()
    for i in range(5):
        a(finding(f"R{i}"))
    assert time.monotonic() - t0 < 0.1
    a.close(timeout=10)
    assert a.stats.failed == 5 and a.stats.sent == 0
    assert all("timed out" in line for line in lines) and len(lines) == 10


def test_a_refused_connection_is_retried_then_given_up(closed_port: int) -> None:
    lines: list[str] = []
    url = f"http://127.0.0.1:{closed_port}/{SECRET}"
    a = alerter([Channel("discord", url=url)], lines, retries=2)
    a(finding())
    a.close()
    assert a.stats.failed == 1 and a.stats.retried == 2 and len(lines) == 3
    assert "refused" in lines[-1].lower() and lines[-1].endswith("giving up")
    assert not any(SECRET in line or str(closed_port) in line for line in lines)


def test_the_cooldown_holds_a_repeated_finding_and_the_cap_ends_a_run(
    endpoint: Endpoint,
) -> None:
    lines: list[str] = []
    a = alerter([Channel("webhook", url=endpoint.url)], lines, cooldown=60, cap=3)
    a(finding("P2"))
    a(finding("P2", onset_step=300))  # the same symptom again within the cooldown
    a(finding("P3"))
    a(finding("P4"))
    a(finding("P5"))  # past the cap
    a(finding("P6"))
    a.close()
    assert [b["id"] for b in endpoint.wait(3)] == ["P2", "P3", "P4"]
    assert a.stats.suppressed == 3
    assert lines == [
        "rl-advisor: alert cap reached (3 this run): further findings are in the report only"
    ]
    again = alerter([Channel("webhook", url=endpoint.url)], lines, cooldown=0, cap=10)
    again(finding("P2"))
    again(finding("P2"))
    again.close()
    assert [b["id"] for b in endpoint.wait(5)][3:] == ["P2", "P2"]


def test_a_full_queue_drops_and_says_so(endpoint: Endpoint) -> None:
    endpoint.delay = 0.3
    lines: list[str] = []
    a = alerter([Channel("webhook", url=endpoint.url)], lines, queue_size=1, cap=100)
    t0 = time.monotonic()
    for i in range(6):
        a(finding(f"Q{i}"))
    assert time.monotonic() - t0 < 0.1
    a.close(timeout=10)
    assert a.stats.dropped >= 3 and a.stats.sent + a.stats.dropped == 6
    assert sum("alert queue full" in line for line in lines) == a.stats.dropped


def test_a_webhook_template_is_rendered_in_a_sandbox(endpoint: Endpoint) -> None:
    lines: list[str] = []
    ok = '{"summary": {{ title | tojson }}, "steps": [{{ onset_step }}], "sev": "{{ severity }}"}'
    bad_json = "{{ title }}"
    escape = '{"x": "{{ finding.__class__.__mro__[1].__subclasses__() }}"}'
    mutate = '{"x": "{{ evidence.append(1) }}"}'
    templates = (ok, bad_json, escape, mutate)
    chans = [Channel("webhook", url=endpoint.url, template=t) for t in templates]
    a = alerter(chans, lines)
    a(finding())
    a.close()
    assert endpoint.wait(1) == [
        {"summary": "rl-advisor: WARNING P2 Entropy collapse (run-7)", "steps": [120], "sev":
         "warning"}
    ]  # fmt: skip
    assert len(lines) == 3 and all("giving up" in line for line in lines)
    assert "SecurityError: access to attribute 'append' of 'list'" in lines[2]
    assert "did not render JSON" in lines[0]
    assert "SecurityError: access to attribute '__class__'" in lines[1]


def test_email_through_an_smtp_sink_with_a_login(smtp_sink: Sink, closed_port: int) -> None:
    lines: list[str] = []
    mail = Channel(
        "email", host=smtp_sink.host, port=smtp_sink.port, security="none", user="ops",
        password=SECRET, sender="advisor@lab.example", to=["a@lab.example", "b@lab.example"],
    )  # fmt: skip
    a = alerter([mail], lines)
    a(finding(severity=Severity.error))
    a.close()
    [msg] = smtp_sink.wait(1)
    assert smtp_sink.logins == [("ops", SECRET)]
    assert msg["Subject"] == "rl-advisor: ERROR P2 Entropy collapse (run-7)"
    assert msg["To"] == "a@lab.example, b@lab.example" and msg["From"] == "advisor@lab.example"
    body = msg.get_payload()
    assert "entropy fell from 0.61 to 0.12" in body and "Change: Raise the clip" in body
    assert lines == []
    # a server that is not there: retried, logged, never the password
    gone = Channel("email", host="127.0.0.1", port=closed_port, security="starttls",
                   user="ops", password=SECRET, to=["a@lab.example"])  # fmt: skip
    b = alerter([gone], lines, retries=1)
    b(finding())
    b.close()
    assert b.stats.failed == 1 and len(lines) == 2
    assert all("email via 127.0.0.1" in line and SECRET not in line for line in lines)


def test_email_over_starttls_and_ssl(
    tls_sink: Sink, certificate: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    mode = tls_sink.mode
    lines: list[str] = []
    mail = Channel("email", host="127.0.0.1", port=tls_sink.port, security=mode, user="ops",
                   password=SECRET, to=["a@lab.example"])  # fmt: skip
    # not trusted: the certificate is checked (a failure, retried, logged without the password)
    untrusted = alerter([mail], lines, retries=0)
    untrusted(finding())
    untrusted.close()
    assert untrusted.stats.failed == 1 and "CERTIFICATE_VERIFY_FAILED" in lines[0]
    assert tls_sink.logins == [] and SECRET not in lines[0]
    monkeypatch.setenv("SSL_CERT_FILE", str(certificate[0]))  # the system's trust store here
    a = alerter([mail], lines)
    a(finding())
    a.close()
    [msg] = tls_sink.wait(1)
    assert msg["Subject"].startswith("rl-advisor: WARNING P2") and a.stats.sent == 1
    assert tls_sink.tls[-1] == mode and tls_sink.logins == [("ops", SECRET)]


def test_a_channel_without_its_secret_is_refused_at_once() -> None:
    with pytest.raises(InputError, match="RL_ADVISOR_SLACK_WEBHOOK_URL"):
        Alerter([Channel("slack")])
    with pytest.raises(InputError, match="not an http") as err:
        Alerter([Channel("webhook", url=f"ftp://{SECRET}")])
    assert SECRET not in str(err.value)
    with pytest.raises(InputError, match="RL_ADVISOR_SMTP_HOST"):
        Alerter([Channel("email", to=["a@b"])])


def test_state_changes_pass_the_cooldown_twice_at_most(endpoint: Endpoint) -> None:
    lines: list[str] = []
    a = alerter([Channel("webhook", url=endpoint.url)], lines, cooldown=60)
    gone = finding(cleared_step=150)
    a.submit(Message(finding(), "fired"))
    a.submit(Message(gone, "recovered"))
    a.submit(Message(finding(onset_step=160), "fired"))  # back again: said
    a.submit(Message(gone, "recovered"))  # a third change within the cooldown: held
    a.submit(Message(finding(onset_step=200), "fired"))
    a.close()
    assert [(b["event"], b["onset_step"]) for b in endpoint.wait(3)] == [
        ("fired", 120), ("recovered", 120), ("fired", 160)
    ]  # fmt: skip
    assert a.stats.suppressed == 2


@given(
    token=st.text(string.ascii_letters + string.digits + "-_.~", min_size=8, max_size=60),
    before=st.text(" :()[]!'\n\t", max_size=20),
    after=st.text(" :()[]!'\n\t", max_size=20),
)
def test_no_log_line_carries_a_secret(token: str, before: str, after: str) -> None:
    lines: list[str] = []
    url = f"https://hooks.example/services/{token}?key={token}"
    a = Alerter([Channel("webhook", url=url)], say=lines.append)
    a._log(f"{before}{url}{after}: {token} /services/{token} {after}")
    [line] = lines
    assert "\n" not in line and token not in line and "***" in line
