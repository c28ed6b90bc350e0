"""The managed platform's jobs by id: the job and its log fetched through the platform's own SDK.

`rl-advisor diagnose --job JOB_ID` and `rl-advisor watch --job JOB_ID` ask the platform, through
its Python SDK (`dashscope`, the `platform` extra; imported only here and only then), for
- the job: `AgenticRL.get` (`GET /fine-tunes/{id}`): its status, model and hyper_parameters;
- its log: `AgenticRL.logs` (`GET /fine-tunes/{id}/logs`), page by page: `offset` the first
  line wanted (counted from 1, as the SDK documents it and its CLI starts), `line` lines
  returned (at most 1,000), the log a list of lines or one string.
The key is the SDK's own variable, DASHSCOPE_API_KEY (DASHSCOPE_HTTP_BASE_URL, read by the SDK
when it is imported, chooses the endpoint); it is handed to the SDK call by call and never
printed: every message that leaves this module has it masked.

A request the platform throttles (429) or fails (5xx), or that times out or finds no server, is
tried again (TRIES in all; after a 429, a 5xx or no server the Retry-After, else 1 s then 2 s, is
waited, after a timeout nothing more); what still fails, or a refusal (401, 403, 404, another
4xx, an answer that is not JSON), is one line (`PlatformError`, an InputError: exit 2).

The job is judged with its own settings: its model and the hyper_parameters the guide knows,
written as a job file (`job_file`) into the caller's private folder with the log; the report
names the job, never that folder (`names`).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from advisor.types import InputError

PAGE = 1000  # lines a log request asks for: the service's upper limit
TRIES = 3
TIMEOUT = 30.0  # seconds a request may take (--timeout)
SUCCEEDED, FAILED, CANCELED = "SUCCEEDED", "FAILED", "CANCELED"
TERMINAL = frozenset({SUCCEEDED, FAILED, CANCELED})
_RETRIED = frozenset({429, 500, 502, 503, 504})
_MAX_PAGES = 100_000  # a server that ignores `offset` would be paged forever
_INSTALL = "pip install 'rl-advisor[platform]'"


class PlatformError(InputError):
    """The platform could not be asked, or refused: one line, exit 2."""


@dataclass(frozen=True)
class PlatformJob:
    """A job as the platform describes it (the `output` of GET /fine-tunes/{id})."""

    job_id: str
    status: str
    model: str | None = None
    hyper_parameters: dict[str, Any] = field(default_factory=dict)
    training_type: str | None = None
    message: str | None = None  # the platform's word on a failed job, when it gives one

    @property
    def finished(self) -> bool:
        return self.status in TERMINAL


def _sdk() -> Any:
    """The SDK's agentic RL client class; a clear line when the extra is not installed."""
    try:
        from dashscope.finetune.agentic_rl import AgenticRL
    except ImportError as err:
        raise PlatformError(
            f"--job: the platform's SDK is not installed ({err}); expected `{_INSTALL}` "
            "(dashscope >= 1.25.19)"
        ) from None
    return AgenticRL


class Platform:
    """The platform as one job's diagnosis asks it (see the module's docstring)."""

    def __init__(
        self,
        timeout: float = TIMEOUT,
        tries: int = TRIES,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        key = os.environ.get("DASHSCOPE_API_KEY", "").strip()
        if not key:
            raise PlatformError(
                "--job: DASHSCOPE_API_KEY is not set; expected the platform's API key there "
                "(the variable the platform's SDK reads)"
            )
        self._key = key
        self.timeout = timeout
        self.tries = max(1, tries)
        self._sleep = sleep
        self._client = _sdk()

    def _masked(self, text: str) -> str:
        return text.replace(self._key, "***") if self._key else text

    def _call(self, job_id: str, what: str, method: str, *args: Any, **kwargs: Any) -> Any:
        """The SDK's `method`, its response's `output` when the platform answered 200; retried
        as the module's docstring says; else a PlatformError naming the job and the cause."""
        import requests  # the SDK's own transport (a dependency of the SDK)

        not_json = getattr(requests.exceptions, "JSONDecodeError", ValueError)  # requests < 2.27
        call = getattr(self._client, method)
        for attempt in range(1, self.tries + 1):
            last = attempt == self.tries
            wait = float(2 ** (attempt - 1))
            try:
                resp = call(*args, api_key=self._key, request_timeout=self.timeout, **kwargs)
            except not_json:
                raise PlatformError(
                    f"job {job_id}: the platform's answer for {what} is not JSON (a proxy's "
                    "page?); expected the platform's API at DASHSCOPE_HTTP_BASE_URL"
                ) from None
            except requests.exceptions.Timeout:
                if last:
                    raise PlatformError(
                        f"job {job_id}: the platform did not answer {what} within "
                        f"{self.timeout:g} s ({self.tries} tries); expected an answer "
                        "(try again later, or a longer --timeout)"
                    ) from None
                continue  # the timeout itself was the wait
            except requests.exceptions.RequestException as err:
                if last:
                    base = os.environ.get("DASHSCOPE_HTTP_BASE_URL", "the platform")
                    raise PlatformError(
                        f"job {job_id}: cannot reach {base} for {what} ({type(err).__name__}, "
                        f"{self.tries} tries); expected the platform's API"
                    ) from None
                self._sleep(wait)
                continue
            except Exception as err:  # the SDK's own failure: said, the key masked
                raise PlatformError(
                    self._masked(
                        f"job {job_id}: the platform's SDK failed on {what} "
                        f"({type(err).__name__}: {' '.join(str(err).split())[:200]})"
                    )
                ) from None
            status = int(getattr(resp, "status_code", 0) or 0)
            if status == 200:
                return getattr(resp, "output", None)
            said = self._said(resp)
            if status in _RETRIED and not last:
                self._sleep(self._retry_after(resp, wait))
                continue
            raise PlatformError(self._masked(self._refusal(job_id, what, status, said)))
        raise AssertionError("unreachable")  # the loop returns or raises

    @staticmethod
    def _said(resp: Any) -> str:
        code = getattr(resp, "code", None)
        message = getattr(resp, "message", None)
        text = " ".join(str(message or "").split())[:200]
        return f"{code}: {text}" if code and text else str(code or text or "no message")

    @staticmethod
    def _retry_after(resp: Any, default: float) -> float:
        headers = getattr(resp, "headers", None) or {}
        raw = next((v for k, v in dict(headers).items() if k.lower() == "retry-after"), None)
        try:
            return min(60.0, max(0.0, float(raw))) if raw is not None else default
        except ValueError:
            return default

    def _refusal(self, job_id: str, what: str, status: int, said: str) -> str:
        if status in (401, 403):
            return (
                f"job {job_id}: the platform refused the key in DASHSCOPE_API_KEY (HTTP {status} "
                f"{said}); expected a valid API key of the job's workspace"
            )
        if status == 404:
            return (
                f"job {job_id}: no such job on the platform (HTTP 404 {said}); expected a job "
                "id as `dashscope rl list` shows it"
            )
        if status == 429:
            return (
                f"job {job_id}: the platform throttled {what} (HTTP 429 {said}) {self.tries} "
                "times; try again later"
            )
        if status >= 500:
            return (
                f"job {job_id}: the platform failed {what} (HTTP {status} {said}) {self.tries} "
                "times; try again later"
            )
        return f"job {job_id}: the platform refused {what} (HTTP {status} {said})"

    def job(self, job_id: str) -> PlatformJob:
        out = self._call(job_id, "the job", "get", job_id)
        data = vars(out) if out is not None and not isinstance(out, dict) else (out or {})
        status = str(data.get("status") or "").upper()
        if not status:
            raise PlatformError(
                f"job {job_id}: the platform's answer has no status; expected a job object"
            )
        hp = data.get("hyper_parameters")
        model = data.get("model") or data.get("base_model")
        message = data.get("message") or data.get("error_message")
        return PlatformJob(
            job_id=job_id,
            status=status,
            model=str(model) if model else None,
            hyper_parameters=dict(hp) if isinstance(hp, dict) else {},
            training_type=data.get("training_type"),
            message=self._masked(str(message)) if message else None,
        )

    def page(self, job_id: str, offset: int) -> tuple[list[str], int | None]:
        """The log's lines from line `offset` on (counted from 1, as the SDK's `offset`, "start
        log line", and its CLI's `--offset` count them), at most PAGE; the log's total length
        when the platform says it."""
        out = self._call(job_id, "the log", "logs", job_id, offset=offset, lines=PAGE)
        data = out if isinstance(out, dict) else {}
        logs = data.get("logs", data.get("content"))
        if logs is None:
            lines: list[str] = []
        elif isinstance(logs, str):
            lines = logs.splitlines()
        elif isinstance(logs, list):
            lines = ["" if x is None else str(x) for x in logs]
        else:
            raise PlatformError(
                f"job {job_id}: the platform's log is a {type(logs).__name__}; expected a string "
                "or a list of lines"
            )
        total = data.get("total")
        return lines, total if isinstance(total, int) else None

    def log_lines(self, job_id: str, start: int = 0) -> list[str]:
        """Every line of the job's log from line `start` on, page by page."""
        lines: list[str] = []
        read = start  # lines read so far; the next page starts at line read + 1
        for _ in range(_MAX_PAGES):
            page, total = self.page(job_id, read + 1)
            lines += page
            read += len(page)
            if len(page) < PAGE or (total is not None and read >= total):
                break
        return lines

    def follow(self, job_id: str, poll: float) -> Iterator[tuple[PlatformJob, list[str]]]:
        """(the job, the log's new lines) at each look until the job ends: the last pair is the
        finished job with the rest of its log."""
        read = 0
        while True:
            job = self.job(job_id)  # first: lines logged before it ended are read after
            lines = self.log_lines(job_id, read)
            read += len(lines)
            yield job, lines
            if job.finished:
                return
            self._sleep(poll)


def job_file(job: PlatformJob, known: Callable[[str], bool]) -> str:
    """The job's own settings as a job file in the SDK's layout (JSON, which YAML reads): its
    model (`model: {name}`, as `TuningModel` has it, so no layout warning is raised about a file
    the user never wrote) and the hyper_parameters the guide knows (`known`), values as the
    platform gave them (the job loader reads numbers written as strings)."""
    hp = {k: v for k, v in job.hyper_parameters.items() if known(k)}
    doc: dict[str, Any] = {}
    if job.model:
        doc["model"] = {"name": job.model}
    doc["training"] = {"hyper_parameters": hp}
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def status_line(job: PlatformJob) -> str | None:
    """What the user is told of a job that did not succeed (None when it did or still runs)."""
    if job.status == FAILED:
        why = f": {job.message}" if job.message else ""
        return f"job {job.job_id} FAILED on the platform{why}"
    if job.status == CANCELED:
        return f"job {job.job_id} was CANCELED on the platform; judged on what it logged"
    return None


def no_log_yet(job: PlatformJob) -> PlatformError:
    """The refusal of a job with no training log to judge."""
    if job.status == FAILED:
        why = f" ({job.message})" if job.message else ""
        return PlatformError(
            f"job {job.job_id}: FAILED before its log held a line{why}; nothing to diagnose"
        )
    if job.finished:
        return PlatformError(
            f"job {job.job_id}: {job.status} with an empty log; nothing to diagnose"
        )
    return PlatformError(
        f"job {job.job_id}: {job.status}, no training log yet; expected a job that has started "
        f"(`rl-advisor watch --job {job.job_id}` follows it)"
    )


def private_names(folder: Path, job: PlatformJob) -> dict[str, str]:
    """The folder's paths as the report names them: the job, not a temporary folder."""
    return {str(folder / "job.log"): f"job {job.job_id}", str(folder / "job.yaml"): "job.yaml"}
