"""Alerts where people are: each finding delivered to Slack, Discord, a webhook or email.

`Alerter` takes the findings `watch` and the library hooks see as they fire (one message per
finding: its evidence, onset and the one change, said in the run's dialect with the override
line to paste) and says when one of them clears again. Deliveries run on one background
thread behind a bounded queue, so training never waits on a network: a full queue drops the
message (logged), a failed delivery is retried with exponential backoff (a 429 or 503 with a
Retry-After header: after the wait it asks for, up to `retry_after_max`) and logged on one line.
A cooldown per finding and a cap per run keep a flapping symptom from flooding a channel.

Secrets (webhook URLs, the SMTP password) come from the environment (or a command-line flag),
never from a config file, and never appear in a log line, an error or a report: every text
this module writes is scrubbed of them.

Configured by flags (`rl-advisor watch --alert webhook --webhook-url URL`), a file (`--alerts
FILE`, YAML or TOML, the keys of `AlertsConfig`; when neither is given, the alerts table of the
per-user settings file, `user_file`), or `Alerter(...)` / `alerter_from(...)` in code.
Nothing here is imported by `diagnose`; jinja2's sandbox loads only for a webhook template.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import queue
import smtplib
import socket
import ssl
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from email.message import EmailMessage
from pathlib import Path
from typing import Any, Literal

from advisor.types import Finding, InputError, Severity

log = logging.getLogger("rl_advisor")

KINDS = ("slack", "discord", "webhook", "email")
# where each channel's secret is read from when no flag gives it
URL_ENV = {
    "slack": "RL_ADVISOR_SLACK_WEBHOOK_URL",
    "discord": "RL_ADVISOR_DISCORD_WEBHOOK_URL",
    "webhook": "RL_ADVISOR_WEBHOOK_URL",
}
SMTP_ENV = {
    "host": "RL_ADVISOR_SMTP_HOST",
    "port": "RL_ADVISOR_SMTP_PORT",
    "user": "RL_ADVISOR_SMTP_USER",
    "password": "RL_ADVISOR_SMTP_PASSWORD",
    "sender": "RL_ADVISOR_SMTP_FROM",
    "security": "RL_ADVISOR_SMTP_SECURITY",
}
DISCORD_ROLE_ENV = "RL_ADVISOR_DISCORD_ROLE"
# the per-user settings file (found from the working directory up; or pyproject.toml's
# [tool.rl-advisor]): its alerts table, when no flag and no --alerts FILE
USER_FILE = "rl-advisor.toml"
_DISCORD_MAX = 2000  # Discord's limit on a message's content
_BODY_MAX = 40_000  # Slack's limit on a message's text
_CHANGES = 2  # state changes of one finding said within its cooldown
# the longest wait a server's Retry-After gets before the next try (seconds; the Alerter's
# `retry_after_max`): the one delivery thread holds the queue meanwhile, so a receiver asking
# for an hour would hold every later alert that long
RETRY_AFTER_MAX = 60.0


class Undeliverable(Exception):
    """A delivery that retrying cannot fix (a 4xx answer, a template that is not JSON)."""


class RetryLater(OSError):
    """A 429 or 503 answer; `after`: the seconds its Retry-After header asks to wait (None
    when it has none or one that is neither delay-seconds nor an HTTP date)."""

    def __init__(self, status: int, after: float | None) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
        self.after = after


def retry_after(value: str | None, now: float | None = None) -> float | None:
    """The seconds a Retry-After header's value asks to wait (RFC 9110 10.2.3): delay-seconds
    (a decimal fraction taken too, as some chat services send one) or an HTTP date, counted
    from `now` (Unix time; the clock when None) and 0 when it is past; None when the value is
    neither."""
    if value is None:
        return None
    text = value.strip()
    if text and all(c.isdigit() or c == "." for c in text) and text.count(".") <= 1:
        try:
            seconds = float(text)
        except ValueError:
            return None
        return seconds if seconds < float("inf") else None
    from datetime import UTC
    from email.utils import parsedate_to_datetime

    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:  # "-0000": a time in UTC whose zone the sender did not know
        when = when.replace(tzinfo=UTC)
    now = time.time() if now is None else now
    return max(0.0, when.timestamp() - now)


# ----------------------------------------------------------------------------- the channels
@dataclass(slots=True)
class Channel:
    """One destination. `url` and `password` are secrets: never said, only used."""

    kind: Literal["slack", "discord", "webhook", "email"]
    url: str | None = None
    role: str | None = None  # discord: a role id mentioned on error findings
    template: str | None = None  # webhook: a jinja2 template of the JSON body (its text)
    headers: dict[str, str] = field(default_factory=dict)  # webhook: extra HTTP headers
    host: str | None = None  # email: the SMTP server
    port: int | None = None
    security: Literal["starttls", "ssl", "none"] = "starttls"
    user: str | None = None
    password: str | None = None
    sender: str | None = None
    to: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        if self.kind == "email":
            return f"email via {self.host}:{self.smtp_port}"
        return "webhook" if self.kind == "webhook" else f"{self.kind} webhook"

    @property
    def smtp_port(self) -> int:
        if self.port is not None:
            return self.port
        return {"ssl": 465, "starttls": 587}.get(self.security, 25)

    def secrets(self) -> list[str]:
        """What a log line must never carry: the URL, its token (path, query, user info, each
        long path segment) and the password; longest first, for replacing."""
        out = [s for s in (self.url, self.password) if s]
        if self.url:
            from urllib.parse import urlsplit

            parts = urlsplit(self.url)
            out += [parts.path, parts.query, parts.netloc.rpartition("@")[0]]
            out += [seg for seg in parts.path.split("/") if len(seg) >= 8]
        return sorted({s for s in out if len(s) >= 4}, key=len, reverse=True)

    def check(self) -> None:
        """Raise InputError when the channel lacks what it needs (no secret in the message)."""
        if self.kind in URL_ENV:
            if not self.url:
                raise InputError(
                    f"--alert {self.kind}: no webhook URL; expected --webhook-url URL or the "
                    f"environment variable {URL_ENV[self.kind]}"
                )
            if not self.url.startswith(("http://", "https://")):
                raise InputError(
                    f"--alert {self.kind}: the webhook URL is not an http(s) URL (not shown: "
                    "it is a secret); expected https://..."
                )
        if self.kind == "email":
            if not self.host:
                raise InputError(
                    f"--alert email: no SMTP server; expected `host` in the alerts file or the "
                    f"environment variable {SMTP_ENV['host']}"
                )
            if not self.to:
                raise InputError("--alert email: no recipient; expected --email-to ADDRESS")


# ----------------------------------------------------------------------------- the messages
@dataclass(slots=True)
class Message:
    """One finding said once: `event` is "fired" or "recovered"."""

    finding: Finding
    event: Literal["fired", "recovered"]
    run: str = ""
    advice: str | None = None
    override: str | None = None  # the change as arguments to paste, in the run's dialect

    @property
    def severity(self) -> str:
        f = self.finding
        if self.event == "recovered":
            return (f.recovered_from or f.severity).value
        return f.severity.value

    @property
    def title(self) -> str:
        f = self.finding
        run = f" ({self.run})" if self.run else ""
        if self.event == "recovered":
            return f"rl-advisor: RECOVERED {f.id} {f.name}{run}"
        return f"rl-advisor: {f.severity.value.upper()} {f.id} {f.name}{run}"

    def lines(self) -> list[str]:
        f = self.finding
        onset = f"step {f.onset_step}" if f.onset_step is not None else "the end of the run"
        if self.event == "recovered":
            return [
                f"{f.name} ({self.severity}) from {onset} cleared at step {f.cleared_step}: "
                "the symptom went away; no change to make for it."
            ]
        seen = (
            f", seen at step {f.detected_step}"
            if f.detected_step not in (None, f.onset_step)
            else ""
        )
        out = [f"Onset: {onset}{seen}."]
        out += [f"- {e.summary}" for e in f.evidence[:3]]
        if self.advice:
            out.append(f"Change: {self.advice}")
        if self.override:
            out.append(f"Override: {self.override}")
        return out

    def text(self) -> str:
        return "\n".join([self.title, *self.lines()])

    def context(self) -> dict[str, Any]:
        """What a webhook body (and its template) gets: plain JSON values."""
        f = self.finding
        return {
            "event": self.event,
            "run": self.run,
            "id": f.id,
            "name": f.name,
            "severity": self.severity,
            "onset_step": f.onset_step,
            "detected_step": f.detected_step,
            "cleared_step": f.cleared_step,
            "evidence": [e.summary for e in f.evidence],
            "advice": self.advice,
            "override": self.override,
            "title": self.title,
            "text": self.text(),
            "finding": f.to_dict(),
        }


def _slack_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _template(source: str) -> Any:
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    env = ImmutableSandboxedEnvironment(autoescape=False, keep_trailing_newline=True)
    return env.from_string(source)


def http_body(channel: Channel, msg: Message) -> bytes:
    """The JSON a webhook channel posts for `msg`."""
    if channel.kind == "slack":
        return json.dumps({"text": _slack_escape(msg.text())[:_BODY_MAX]}).encode()
    if channel.kind == "discord":
        mention = channel.role and msg.event == "fired" and msg.finding.severity == Severity.error
        head = f"<@&{channel.role}> " if mention else ""
        content = (head + msg.text())[:_DISCORD_MAX]
        allowed: dict[str, Any] = {"parse": []}
        if mention:
            allowed["roles"] = [channel.role]
        return json.dumps({"content": content, "allowed_mentions": allowed}).encode()
    if channel.template is None:
        return json.dumps(msg.context()).encode()
    try:
        text = _template(channel.template).render(**msg.context())
    except Exception as err:  # a sandbox refusal or a template error: retrying cannot help
        raise Undeliverable(f"the webhook template failed: {type(err).__name__}: {err}") from err
    try:
        json.loads(text)
    except ValueError as err:
        raise Undeliverable(f"the webhook template did not render JSON ({err})") from err
    return text.encode()


def email_of(channel: Channel, msg: Message) -> EmailMessage:
    mail = EmailMessage()
    mail["Subject"] = msg.title
    mail["From"] = channel.sender or channel.user or "rl-advisor@localhost"
    mail["To"] = ", ".join(channel.to)
    mail.set_content(msg.text() + "\n")
    return mail


# ----------------------------------------------------------------------------- delivery
def deliver(channel: Channel, msg: Message, timeout: float) -> None:
    """Send `msg` once. Raises Undeliverable (do not retry) or another error (retry)."""
    if channel.kind == "email":
        _send_mail(channel, email_of(channel, msg), timeout)
        return
    assert channel.url is not None
    body = http_body(channel, msg)
    headers = {"Content-Type": "application/json", "User-Agent": "rl-advisor", **channel.headers}
    req = urllib.request.Request(channel.url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as answer:
            answer.read(1024)
    except urllib.error.HTTPError as err:
        if err.code in (429, 503):
            raise RetryLater(err.code, retry_after(err.headers.get("Retry-After"))) from None
        if err.code >= 500:
            raise OSError(f"HTTP {err.code}") from None
        raise Undeliverable(f"HTTP {err.code}") from None


def _send_mail(channel: Channel, mail: EmailMessage, timeout: float) -> None:
    assert channel.host is not None
    smtp: smtplib.SMTP
    if channel.security == "ssl":
        smtp = smtplib.SMTP_SSL(
            channel.host, channel.smtp_port, timeout=timeout, context=ssl.create_default_context()
        )
    else:
        smtp = smtplib.SMTP(channel.host, channel.smtp_port, timeout=timeout)
    with smtp:
        if channel.security == "starttls":
            smtp.starttls(context=ssl.create_default_context())
        if channel.user and channel.password:
            try:
                smtp.login(channel.user, channel.password)
            except smtplib.SMTPAuthenticationError as err:
                raise Undeliverable(f"SMTP login refused ({err.smtp_code})") from None
        smtp.send_message(mail)


def _why(err: BaseException) -> str:
    if isinstance(err, socket.timeout | TimeoutError):
        return "timed out"
    if isinstance(err, RetryLater):
        return f"OSError: HTTP {err.status}" + (
            f" (Retry-After {err.after:g} s)" if err.after is not None else ""
        )
    if isinstance(err, urllib.error.URLError):
        return _why(err.reason) if isinstance(err.reason, BaseException) else str(err.reason)
    return f"{type(err).__name__}: {err}" if not isinstance(err, Undeliverable) else str(err)


# ----------------------------------------------------------------------------- the alerter
@dataclass
class Stats:
    sent: int = 0
    failed: int = 0
    retried: int = 0
    dropped: int = 0  # the queue was full
    suppressed: int = 0  # cooldown or cap


class Alerter:
    """Delivers findings (`alerter(finding)`) and their recoveries (`alerter.check(advisor)`)
    to its channels from a background thread; `close()` waits (bounded) for the queue."""

    def __init__(
        self,
        channels: Sequence[Channel],
        *,
        min_severity: str | Severity = Severity.warning,
        cooldown: float = 600.0,
        cap: int = 20,
        retries: int = 3,
        backoff: float = 2.0,
        retry_after_max: float = RETRY_AFTER_MAX,
        timeout: float = 10.0,
        queue_size: int = 64,
        run: str = "",
        say: Callable[[str], None] | None = None,
    ) -> None:
        for ch in channels:
            ch.check()
        self.channels = list(channels)
        self.min_severity = Severity(min_severity)
        self.cooldown = cooldown
        self.cap = cap
        self.retries = retries
        self.backoff = backoff
        self.retry_after_max = retry_after_max
        self.timeout = timeout
        self.run = run
        self._say = say
        self.stats = Stats()
        self._queue: queue.Queue[tuple[Channel, Message] | None] = queue.Queue(queue_size)
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._said: dict[str, tuple[str, float, int]] = {}  # finding id -> see submit
        self._accepted = 0
        self._capped = False
        self._open: dict[tuple[str, int | None], Finding] = {}  # fired, not yet cleared
        self._checked = 0.0
        self._speaker: Any = None
        self._closing = threading.Event()

    # -- what the caller's thread does (cheap, never raises) ----------------------------------
    def __call__(self, finding: Finding, advisor: Any = None) -> None:
        """A new finding: said if at or above min_severity, past the cooldown, within the cap."""
        try:
            if finding.severity.rank < self.min_severity.rank or finding.cleared_step is not None:
                return
            if advisor is not None and any(k[0] == finding.id for k in self._open):
                self.check(advisor, every=0)  # the episode before this one ended: say so first
            self._open[(finding.id, finding.onset_step)] = finding
            advice, override = self._change(finding, advisor)
            self.submit(Message(finding, "fired", self.run, advice, override))
        except Exception as err:  # an alert must never break the run it watches
            self._log(f"rl-advisor: alert for {finding.id} not sent: {type(err).__name__}")

    def check(self, advisor: Any, every: float = 1.0) -> None:
        """Say the findings alerted on that have cleared since (at most once per `every` s;
        nothing to do, and no cost, while none is open)."""
        if not self._open:
            return
        now = time.monotonic()
        if every and now - self._checked < every:
            return
        self._checked = now
        try:
            current = {(f.id, f.onset_step): f for f in advisor.findings}
        except Exception:
            return
        for key in list(self._open):
            f = current.get(key)
            if f is not None and f.cleared_step is not None:
                del self._open[key]
                self.submit(Message(f, "recovered", self.run))

    def submit(self, msg: Message) -> bool:
        """Queue `msg` for every channel; False when the cooldown, the cap or a full queue
        held it back.

        The cooldown is per finding id: within it, a message that says what the last one
        said (fired again) is held back; one that changes it (recovered, then fired again) is
        said, at most twice per cooldown, so a flapping symptom costs a few messages."""
        now = time.monotonic()
        fid = msg.finding.id
        with self._lock:
            said = self._said.get(fid)  # (event, time the cooldown started, changes said)
            changes = 0
            if said is not None and now - said[1] < self.cooldown:
                if said[0] == msg.event or said[2] >= _CHANGES:
                    self.stats.suppressed += 1
                    return False
                changes = said[2] + 1
            if self._accepted >= self.cap:
                self.stats.suppressed += 1
                if not self._capped:
                    self._capped = True
                    self._log(
                        f"rl-advisor: alert cap reached ({self.cap} this run): further findings "
                        "are in the report only"
                    )
                return False
            start = said[1] if said is not None and changes else now
            self._said[fid] = (msg.event, start, changes)
            self._accepted += 1
            self._start()
        for ch in self.channels:
            try:
                self._queue.put_nowait((ch, msg))
            except queue.Full:
                self.stats.dropped += 1
                self._log(f"rl-advisor: alert queue full, {msg.finding.id} not sent to {ch.name}")
        return True

    def _change(self, f: Finding, advisor: Any) -> tuple[str | None, str | None]:
        """The finding's one change in the run's dialect: the advice and the arguments to
        paste (verl Hydra overrides, `trl grpo` flags, the platform's --set)."""
        action = f.action
        if action is None:
            return None, None
        if advisor is None:
            return action.advice, None
        try:
            framework = advisor.framework()  # known better as the log goes on
            if self._speaker is None or self._speaker[0] != framework:
                from advisor.dialect import Speaker

                self._speaker = (framework, Speaker(framework, advisor.hyper_parameters))
            sp = self._speaker[1]
            return sp.text(action.advice), sp.override_args([sp.said(c) for c in action.changes])
        except Exception:
            return action.advice, None

    # -- the background thread ----------------------------------------------------------------
    def _start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._work, name="rl-advisor-alerts")
            self._thread.daemon = True  # a hung network never keeps the process alive
            self._thread.start()

    def _work(self) -> None:
        while True:
            item = self._queue.get()
            try:
                if item is None:
                    return
                self._deliver(*item)
            finally:
                self._queue.task_done()

    def _deliver(self, ch: Channel, msg: Message) -> None:
        attempts = self.retries + 1
        for attempt in range(1, attempts + 1):
            try:
                deliver(ch, msg, self.timeout)
                self.stats.sent += 1
                return
            except Undeliverable as err:
                self._failed(ch, msg, err, attempt, final=True)
                return
            except Exception as err:
                last = attempt == attempts
                # the wait the server asked for (Retry-After, up to retry_after_max), else
                # 1x, 2x, 4x the backoff
                asked = err.after if isinstance(err, RetryLater) else None
                if asked is not None:
                    wait = min(asked, self.retry_after_max)
                else:
                    wait = self.backoff * 2 ** (attempt - 1)
                self._failed(ch, msg, err, attempt, final=last, wait=wait)
                if last:
                    return
                self.stats.retried += 1
                # cut short (one last try each) once close() is waiting
                if self._closing.wait(wait):
                    attempts = attempt + 1

    def _failed(
        self,
        ch: Channel,
        msg: Message,
        err: BaseException,
        n: int,
        final: bool,
        wait: float | None = None,
    ) -> None:
        what = "giving up" if final else "retrying"
        if not final and isinstance(err, RetryLater) and err.after is not None and wait is not None:
            capped = " (the longest wait allowed)" if wait < err.after else ""
            what = f"retrying in {wait:g} s{capped}"
        if final:
            self.stats.failed += 1
        self._log(
            f"rl-advisor: alert {msg.finding.id} ({msg.event}) to {ch.name} failed "
            f"(attempt {n}): {_why(err)}; {what}"
        )

    def _log(self, line: str) -> None:
        for ch in self.channels:
            for secret in ch.secrets():
                line = line.replace(secret, "***")
        line = " ".join(line.split())  # one line whatever an error quoted
        if self._say is not None:
            try:
                self._say(line)
                return
            except Exception:
                pass
        log.warning("%s", line)

    def close(self, timeout: float = 30.0) -> None:
        """Wait up to `timeout` s for the queued messages (retries are cut short), then stop
        the thread. Idempotent; what is still queued after that is dropped."""
        thread = self._thread
        if thread is None or not thread.is_alive():
            return
        deadline = time.monotonic() + timeout
        while self._queue.unfinished_tasks and time.monotonic() < deadline - timeout / 2:
            time.sleep(0.02)
        self._closing.set()
        with contextlib.suppress(queue.Full):
            self._queue.put(None, timeout=max(0.0, deadline - time.monotonic()))
        thread.join(max(0.0, deadline - time.monotonic()))
        left = self._queue.qsize()
        if thread.is_alive() or left:
            self._log(f"rl-advisor: alerts stopped with {left} message(s) not delivered")


# ----------------------------------------------------------------------------- configuration
def _config_model() -> Any:
    from pydantic import BaseModel, ConfigDict, Field

    class ChannelConfig(BaseModel):
        model_config = ConfigDict(extra="forbid")
        kind: Literal["slack", "discord", "webhook", "email"]
        url_env: str | None = None  # the variable holding the webhook URL (a secret)
        role: str | None = None
        template: str | None = None  # a file, relative to the alerts file
        headers: dict[str, str] = Field(default_factory=dict)
        host: str | None = None
        port: int | None = Field(default=None, ge=1, le=65535)
        security: Literal["starttls", "ssl", "none"] = "starttls"
        user: str | None = None
        password_env: str | None = None
        sender: str | None = Field(default=None, alias="from")
        to: list[str] = Field(default_factory=list)

    class AlertsConfig(BaseModel):
        model_config = ConfigDict(extra="forbid")
        channels: list[ChannelConfig] = Field(min_length=1)
        min_severity: Literal["info", "warning", "error"] = "warning"
        cooldown: float = Field(default=600.0, ge=0)
        cap: int = Field(default=20, ge=0)
        retries: int = Field(default=3, ge=0, le=10)
        backoff: float = Field(default=2.0, ge=0)
        retry_after_max: float = Field(default=RETRY_AFTER_MAX, ge=0)
        timeout: float = Field(default=10.0, gt=0)

    return AlertsConfig


def _read_table(path: Path, section: bool) -> Mapping[str, Any] | None:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise InputError(
            f"{path}: cannot read the alerts file ({err.__class__.__name__})"
        ) from None
    try:
        if path.suffix == ".toml":
            import tomllib

            data: Any = tomllib.loads(text)
        else:
            from ruamel.yaml import YAML

            data = YAML(typ="safe").load(text)
    except Exception as err:
        where = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise InputError(
            f"{path}: not valid {path.suffix.lstrip('.') or 'YAML'}: {where}"
        ) from None
    if not isinstance(data, Mapping):
        raise InputError(f"{path}: expected a mapping of alert settings at the top")
    if path.name == "pyproject.toml":  # the per-user settings' table there
        tool = data.get("tool")
        data = tool.get("rl-advisor") if isinstance(tool, Mapping) else None
        if not isinstance(data, Mapping):
            return None
    if "alerts" in data or section:
        data = data.get("alerts")
        if data is None:
            return None
        if not isinstance(data, Mapping):
            raise InputError(f"{path}: alerts: expected a mapping of alert settings")
    return data


def user_file(start: Path) -> Path | None:
    """The per-user settings file: `rl-advisor.toml`, or a `pyproject.toml` with a
    `[tool.rl-advisor]` table, in `start` or the nearest folder above it that has one."""
    import tomllib

    for folder in (start, *start.parents):
        own = folder / USER_FILE
        if own.is_file():
            return own
        py = folder / "pyproject.toml"
        if py.is_file():
            try:
                tool = tomllib.loads(py.read_text(encoding="utf-8")).get("tool", {})
            except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
                continue  # another tool's file: not ours to judge
            if isinstance(tool, Mapping) and "rl-advisor" in tool:
                return py
    return None


def _env(name: str | None, env: Mapping[str, str]) -> str | None:
    return env.get(name) or None if name else None


def load_config(path: Path, env: Mapping[str, str], section: bool = False) -> dict[str, Any] | None:
    """Alerter keywords from an alerts file (YAML or TOML; top-level keys or an `alerts`
    table); None when `section` and the file has no alerts table."""
    from pydantic import ValidationError

    data = _read_table(path, section)
    if data is None:
        return None
    try:
        cfg = _config_model().model_validate(data)
    except ValidationError as err:
        first = err.errors()[0]
        place = ".".join(str(p) for p in first["loc"]) or "(top)"
        raise InputError(f"{path}: alerts: {place}: {first['msg']}") from None
    channels = []
    for c in cfg.channels:
        template = None
        if c.template is not None:
            tpath = (path.parent / c.template).resolve()
            try:
                template = tpath.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                raise InputError(
                    f"{path}: alerts: template {c.template}: cannot read it; expected a jinja2 "
                    "file of the webhook's JSON body"
                ) from None
        url = _env(c.url_env or URL_ENV.get(c.kind), env) if c.kind in URL_ENV else None
        channels.append(
            Channel(
                kind=c.kind,
                url=url,
                role=c.role or _env(DISCORD_ROLE_ENV, env),
                template=template,
                headers=dict(c.headers),
                host=c.host or _env(SMTP_ENV["host"], env),
                port=c.port,
                security=c.security,
                user=c.user or _env(SMTP_ENV["user"], env),
                password=_env(c.password_env or SMTP_ENV["password"], env),
                sender=c.sender or _env(SMTP_ENV["sender"], env),
                to=list(c.to),
            )
        )
    return {
        "channels": channels,
        "min_severity": cfg.min_severity,
        "cooldown": cfg.cooldown,
        "cap": cfg.cap,
        "retries": cfg.retries,
        "backoff": cfg.backoff,
        "retry_after_max": cfg.retry_after_max,
        "timeout": cfg.timeout,
    }


def channels_from_flags(
    kinds: Iterable[str],
    env: Mapping[str, str],
    *,
    webhook_url: str | None = None,
    template: Path | None = None,
    email_to: Sequence[str] = (),
) -> list[Channel]:
    """The channels `--alert KIND` names, their secrets from the flags or the environment."""
    kinds = list(dict.fromkeys(kinds))
    for k in kinds:
        if k not in KINDS:
            raise InputError(f"--alert {k}: unknown; expected one of {', '.join(KINDS)}")
    hooks = [k for k in kinds if k in URL_ENV]
    if webhook_url is not None and len(hooks) != 1:
        raise InputError(
            "--webhook-url: expected exactly one of --alert slack|discord|webhook with it (give "
            "the others' URLs in their environment variables)"
        )
    body = None
    if template is not None:
        if "webhook" not in kinds:
            raise InputError("--alert-template: only for --alert webhook")
        try:
            body = template.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            raise InputError(
                f"--alert-template {template}: cannot read it; expected a jinja2 file of the "
                "webhook's JSON body"
            ) from None
    out = []
    for k in kinds:
        if k == "email":
            port = _env(SMTP_ENV["port"], env)
            security = _env(SMTP_ENV["security"], env) or "starttls"
            if security not in ("starttls", "ssl", "none"):
                raise InputError(
                    f"{SMTP_ENV['security']}={security}: expected starttls, ssl or none"
                )
            if port is not None and not port.isdigit():
                raise InputError(f"{SMTP_ENV['port']}={port}: expected a port number")
            out.append(
                Channel(
                    kind="email",
                    host=_env(SMTP_ENV["host"], env),
                    port=int(port) if port else None,
                    security=security,  # type: ignore[arg-type]
                    user=_env(SMTP_ENV["user"], env),
                    password=_env(SMTP_ENV["password"], env),
                    sender=_env(SMTP_ENV["sender"], env),
                    to=list(email_to),
                )
            )
        else:
            out.append(
                Channel(
                    kind=k,  # type: ignore[arg-type]
                    url=webhook_url or _env(URL_ENV[k], env),
                    role=_env(DISCORD_ROLE_ENV, env) if k == "discord" else None,
                    template=body if k == "webhook" else None,
                )
            )
    return out


def alerter_from(
    config: str | Path | Mapping[str, Any] | Alerter | None,
    *,
    env: Mapping[str, str] | None = None,
    run: str = "",
    say: Callable[[str], None] | None = None,
) -> Alerter | None:
    """An Alerter from what a hook was given: an Alerter as is, an alerts file, or the
    keywords of `Alerter` (its `channels` as Channel objects or mappings of Channel's fields)."""
    if config is None or isinstance(config, Alerter):
        return config
    env = os.environ if env is None else env
    if isinstance(config, str | Path):
        kwargs = load_config(Path(config), env)
        assert kwargs is not None
    else:
        kwargs = dict(config)
        kwargs["channels"] = [
            c if isinstance(c, Channel) else Channel(**c) for c in kwargs.get("channels", [])
        ]
    return Alerter(**kwargs, run=run, say=say)
