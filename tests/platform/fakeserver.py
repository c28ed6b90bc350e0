"""A loopback stand-in for the platform's fine-tune endpoints, as the `dashscope` SDK calls them.

Run as `python -m tests.platform.fakeserver SCENARIO.json`: it binds 127.0.0.1 on a free port,
prints `PORT` on its first stdout line, and serves until killed. Only the shapes the SDK parses
(dashscope.common.utils._handle_http_response, finetune.customize_types.FineTuneOutput) and the
platform's documented responses are served:

- `GET /api/v1/fine-tunes/{job_id}` -> `{"request_id", "output": {job_id, job_name, status,
  model, base_model, hyper_parameters, training_type, ...}}`
- `GET /api/v1/fine-tunes/{job_id}/logs?offset=N&line=M` -> `{"request_id", "output":
  {"total": T, "logs": [line, ...]}}`: from line `offset` (counted from 1, the SDK's "start log
  line"), at most `line` (<= 1000) returned
- an error: its HTTP status with `{"request_id", "code", "message"}` (application/json)

SCENARIO maps a job id to:
  job:        the job object (`output` of the job's GET), its `status` the first one served
  statuses:   optional list: the status of each successive GET (the last one repeats)
  log_file:   the console text served as the job's log (a path)
  grow:       optional: lines visible per job GET (a RUNNING job's log grows as it is polled)
  logs_as:    "list" (default, as documented) or "string" (the lines joined by newlines)
  error:      optional [http status, code, message]: every request about the job answers so
  fail_first: optional [http status, n]: the first n requests about the job answer so
  retry_after optional: the Retry-After header (seconds) sent with an error
  delay:      optional seconds to wait before answering (a timeout)
  html:       optional: every request about the job answers 200 with an HTML page (a proxy's)
Every request is appended to `requests.jsonl` beside SCENARIO (path, query, Authorization
present or not), so a test can check the paging and that a key was sent.
"""

from __future__ import annotations

import json
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

PREFIX = "/api/v1/fine-tunes/"


class _State:
    def __init__(self, scenario: Path) -> None:
        self.jobs: dict[str, Any] = json.loads(scenario.read_text(encoding="utf-8"))
        self.log = scenario.with_name("requests.jsonl")
        self.polls: dict[str, int] = {}  # job GETs answered, by job
        self.asked: dict[str, int] = {}  # requests about each job
        self.lock = threading.Lock()

    def lines(self, job_id: str) -> list[str]:
        spec = self.jobs[job_id]
        text = Path(spec["log_file"]).read_text(encoding="utf-8") if "log_file" in spec else ""
        lines = text.splitlines()
        if "grow" in spec:
            lines = lines[: spec["grow"] * max(1, self.polls.get(job_id, 0))]
        return lines


def _handler(state: _State) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

        def _send(self, status: int, body: dict[str, Any], retry_after: Any = None) -> None:
            data = json.dumps(body).encode("utf-8")
            self.send_response(status)
            if retry_after is not None:
                self.send_header("Retry-After", str(retry_after))
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            url = urlparse(self.path)
            query = {k: v[0] for k, v in parse_qs(url.query).items()}
            auth = self.headers.get("Authorization", "")
            with state.lock, state.log.open("a", encoding="utf-8") as fh:
                fh.write(
                    json.dumps(
                        {"path": url.path, "query": query, "auth": auth.startswith("Bearer ")}
                    )
                    + "\n"
                )
            rid = str(uuid.uuid4())
            if not url.path.startswith(PREFIX):
                self._send(404, {"request_id": rid, "code": "NotFound", "message": "no route"})
                return
            parts = url.path[len(PREFIX) :].split("/")
            job_id = parts[0]
            spec = state.jobs.get(job_id)
            if spec is None:
                msg = f"Job {job_id} not found"
                self._send(404, {"request_id": rid, "code": "NotFound", "message": msg})
                return
            if spec.get("delay"):
                time.sleep(float(spec["delay"]))
            if spec.get("html"):
                page = b"<html><body>Sign in</body></html>"
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(page)))
                self.end_headers()
                self.wfile.write(page)
                return
            with state.lock:
                asked = state.asked[job_id] = state.asked.get(job_id, 0) + 1
            error = spec.get("error")
            if spec.get("fail_first") and asked <= spec["fail_first"][1]:
                error = [spec["fail_first"][0], "ServiceUnavailable", "try again"]
            if error:
                status, code, message = error
                body = {"request_id": rid, "code": code, "message": message}
                self._send(status, body, spec.get("retry_after"))
                return
            if parts[1:] == []:
                with state.lock:
                    n = state.polls[job_id] = state.polls.get(job_id, 0) + 1
                job = dict(spec["job"])
                statuses = spec.get("statuses")
                if statuses:
                    job["status"] = statuses[min(n, len(statuses)) - 1]
                self._send(200, {"request_id": rid, "output": job})
                return
            if parts[1:] == ["logs"]:
                offset = int(query.get("offset", 1))
                if offset < 1:
                    self._send(400, {"request_id": rid, "code": "InvalidParameter",
                                     "message": "offset is a line number, from 1"})  # fmt: skip
                    return
                count = min(int(query.get("line", 100)), 1000)
                lines = state.lines(job_id)
                page = lines[offset - 1 : offset - 1 + count]
                logs: Any = page if spec.get("logs_as", "list") == "list" else "\n".join(page)
                self._send(200, {"request_id": rid, "output": {"total": len(lines), "logs": logs}})
                return
            self._send(404, {"request_id": rid, "code": "NotFound", "message": "no route"})

    return Handler


def main(argv: list[str]) -> None:
    state = _State(Path(argv[0]))
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main(sys.argv[1:])
