"""Real servers on the loopback for the alert tests: an HTTP endpoint (http.server in a
thread) whose answers a test scripts, and an SMTP sink (the protocol's few commands a client
sends, AUTH PLAIN included) that keeps every message it receives."""

from __future__ import annotations

import base64
import json
import socket
import socketserver
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from email import message_from_bytes
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from advisor.types import Run

CORPUS = Path(__file__).resolve().parents[2] / "sample_metrics" / "corpus"


def rows(run: Run) -> Iterator[tuple[int, dict[str, Any]]]:
    """The Run's rows as an orchestrator passes them, step by step."""
    for row in run.frame.iter_rows(named=True):
        step = row.pop("step")
        yield int(step), {k: v for k, v in row.items() if v is not None}


@dataclass
class Endpoint:
    """What the HTTP server answers (a script of status codes, then 200) and what it got."""

    url: str = ""
    # statuses to answer first, in order; a (status, headers) pair answers with those headers
    script: list[int | tuple[int, dict[str, str]]] = field(default_factory=list)
    delay: float = 0.0  # seconds before each answer (a slow or hung receiver)
    posts: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # (path, JSON body)
    raw: list[bytes] = field(default_factory=list)
    attempts: int = 0
    times: list[float] = field(default_factory=list)  # time.monotonic() of each request
    lock: threading.Lock = field(default_factory=threading.Lock)

    def bodies(self) -> list[dict[str, Any]]:
        with self.lock:
            return [b for _, b in self.posts]

    def wait(self, n: int, timeout: float = 10.0) -> list[dict[str, Any]]:
        end = time.monotonic() + timeout
        while time.monotonic() < end and len(self.posts) < n:
            time.sleep(0.01)
        return self.bodies()


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    state = Endpoint()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            with state.lock:
                state.attempts += 1
                state.times.append(time.monotonic())
                answer = state.script.pop(0) if state.script else 200
            status, headers = answer if isinstance(answer, tuple) else (answer, {})
            if state.delay:
                time.sleep(state.delay)
            if status == 200:
                with state.lock:
                    state.raw.append(body)
                    state.posts.append((self.path, json.loads(body)))
            try:
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")
            except OSError:  # the client gave up (timeout)
                pass

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    yield state
    server.shutdown()
    server.server_close()


@pytest.fixture
def closed_port() -> int:
    """A loopback port nobody listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Sink:
    host: str = "127.0.0.1"
    port: int = 0
    messages: list[Message] = field(default_factory=list)
    logins: list[tuple[str, str]] = field(default_factory=list)
    mode: str = "plain"  # "starttls": offered after EHLO; "ssl": TLS from the first byte
    tls: list[str] = field(default_factory=list)  # how each secured session was secured

    def wait(self, n: int, timeout: float = 10.0) -> list[Message]:
        end = time.monotonic() + timeout
        while time.monotonic() < end and len(self.messages) < n:
            time.sleep(0.01)
        return list(self.messages)


def _serve_smtp(sink: Sink, context: ssl.SSLContext | None, mode: str) -> socketserver.TCPServer:
    """An SMTP server: plain, STARTTLS offered (mode "starttls") or TLS from the start ("ssl")."""
    sink.mode = mode

    class Handler(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            conn: socket.socket = self.request
            if mode == "ssl":
                assert context is not None
                conn = context.wrap_socket(conn, server_side=True)
                sink.tls.append("ssl")
            rfile = conn.makefile("rb")

            def say(line: str) -> None:
                conn.sendall(line.encode() + b"\r\n")

            say("220 sink ESMTP")
            while line := rfile.readline():
                verb = line.decode().strip()
                upper = verb.upper()
                if upper.startswith("EHLO"):
                    say("250-sink")
                    if mode == "starttls" and not sink.tls:
                        say("250-STARTTLS")
                    say("250 AUTH PLAIN")
                elif upper == "STARTTLS" and context is not None:
                    say("220 go ahead")
                    conn = context.wrap_socket(conn, server_side=True)
                    rfile = conn.makefile("rb")
                    sink.tls.append("starttls")
                elif upper.startswith("HELO"):
                    say("250 sink")
                elif upper.startswith("AUTH PLAIN"):
                    _, user, password = base64.b64decode(verb.split()[2]).decode().split("\0")
                    sink.logins.append((user, password))
                    say("235 ok")
                elif upper.startswith(("MAIL", "RCPT", "RSET", "NOOP")):
                    say("250 ok")
                elif upper == "DATA":
                    say("354 go on")
                    data = b""
                    while (chunk := rfile.readline()) not in (b".\r\n", b""):
                        data += chunk[1:] if chunk.startswith(b"..") else chunk
                    sink.messages.append(message_from_bytes(data))
                    say("250 kept")
                elif upper == "QUIT":
                    say("221 bye")
                    return
                else:
                    say("502 not here")

    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    sink.port = int(server.server_address[1])
    return server


@pytest.fixture
def smtp_sink() -> Iterator[Sink]:
    sink = Sink()
    server = _serve_smtp(sink, None, "plain")
    yield sink
    server.shutdown()
    server.server_close()


@pytest.fixture
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 (openssl), and its key."""
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    done = subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
         "-keyout", str(key), "-out", str(cert)],
        capture_output=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        pytest.skip("openssl cannot make a test certificate here")
    return cert, key


@pytest.fixture(params=["starttls", "ssl"])
def tls_sink(request: pytest.FixtureRequest, certificate: tuple[Path, Path]) -> Iterator[Sink]:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*certificate)
    sink = Sink()
    server = _serve_smtp(sink, context, request.param)
    yield sink
    server.shutdown()
    server.server_close()
