"""The HTML report in a real browser: headless Chromium opens it offline, driven through the
DevTools protocol over a pipe (`--remote-debugging-pipe`: JSON messages ending in NUL on file
descriptors 3 and 4). The page must paint (a screenshot that is not one colour), ask the
network for nothing, and throw no script error. The same check on a page that does fetch and
throw shows both, so the check itself can fail."""

from __future__ import annotations

import base64
import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from advisor.cli import main

LIVEFIRE = Path(__file__).parents[1] / "livefire" / "runs"
CHROMIUM = next(
    (p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None
)
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(CHROMIUM is None, reason="no chromium (apt-get install -y chromium)"),
    pytest.mark.skipif(sys.platform == "win32", reason="the DevTools pipe is POSIX fds 3 and 4"),
]
ImageModule = pytest.importorskip("PIL.Image", reason="pillow (the dev extra) decodes the PNG")


FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-extensions", "--no-first-run", "--hide-scrollbars", "--window-size=1000,1400",
)  # fmt: skip


class Browser:
    """A headless Chromium and its DevTools pipe."""

    def __init__(self, profile: Path) -> None:
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()
        os.set_inheritable(to_browser_r, True)
        os.set_inheritable(from_browser_w, True)
        # the child gets our read end as its fd 3 and our write end as its fd 4
        self.proc = subprocess.Popen(
            [str(CHROMIUM), *FLAGS, f"--user-data-dir={profile}", "--remote-debugging-pipe"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            pass_fds=(3, 4),
            preexec_fn=lambda: (os.dup2(to_browser_r, 3), os.dup2(from_browser_w, 4)),
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []

    def _read(self) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            chunk = os.read(self._from_browser, 1 << 16)
            if not chunk:
                raise RuntimeError("chromium closed the DevTools pipe")
            self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        return json.loads(message)  # type: ignore[no-any-return]

    def send(self, method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        self._next_id += 1
        call: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if session:
            call["sessionId"] = session
        os.write(self._to_browser, json.dumps(call).encode() + b"\0")
        while True:
            message = self._read()
            if message.get("id") == self._next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})  # type: ignore[no-any-return]
            self.events.append(message)

    def wait_for(self, method: str) -> None:
        while not any(e.get("method") == method for e in self.events):
            self.events.append(self._read())

    def close(self) -> None:
        with contextlib.suppress(RuntimeError, OSError):
            self.send("Browser.close")
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._to_browser)
        os.close(self._from_browser)


def open_offline(page: Path) -> tuple[bytes, list[str], list[str]]:
    """Open `page` with the network off: (the screenshot's PNG, the requests it made beyond
    its own file, the script errors and failed loads)."""
    with tempfile.TemporaryDirectory(prefix="rl-advisor-chromium-") as profile:
        browser = Browser(Path(profile))
        try:
            target = browser.send("Target.createTarget", url="about:blank")["targetId"]
            session = browser.send("Target.attachToTarget", targetId=target, flatten=True)[
                "sessionId"
            ]
            for domain in ("Network", "Runtime", "Log", "Page"):
                browser.send(f"{domain}.enable", session)
            browser.send(
                "Network.emulateNetworkConditions", session,
                offline=True, latency=0, downloadThroughput=-1, uploadThroughput=-1,
            )  # fmt: skip
            browser.send("Page.navigate", session, url=page.resolve().as_uri())
            browser.wait_for("Page.loadEventFired")
            shot = browser.send("Page.captureScreenshot", session, format="png")["data"]
        finally:
            browser.close()
    own = page.resolve().as_uri()
    requests = [
        e["params"]["request"]["url"]
        for e in browser.events
        if e.get("method") == "Network.requestWillBeSent" and e["params"]["request"]["url"] != own
    ]
    errors = [
        json.dumps(e["params"])
        for e in browser.events
        if e.get("method") in ("Runtime.exceptionThrown", "Network.loadingFailed")
        or (e.get("method") == "Log.entryAdded" and e["params"]["entry"]["level"] == "error")
        or (e.get("method") == "Runtime.consoleAPICalled" and e["params"]["type"] == "error")
    ]
    return base64.b64decode(shot), requests, errors


def spread(png: bytes) -> tuple[float, int]:
    """The screenshot's grey-level variance and how many distinct grey levels it holds."""
    grey = ImageModule.open(io.BytesIO(png)).convert("L")
    counts = grey.histogram()
    n = sum(counts)
    mean = sum(i * c for i, c in enumerate(counts)) / n
    return sum(c * (i - mean) ** 2 for i, c in enumerate(counts)) / n, sum(1 for c in counts if c)


def test_the_report_renders_offline_without_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "report.html"
    code = main(["diagnose", str(LIVEFIRE / "lr-tiny"), "--format", "html", "-o", str(out)])
    assert code == 1 and out.exists()
    png, requests, errors = open_offline(out)
    assert requests == [] and errors == []
    variance, levels = spread(png)
    assert variance > 100 and levels > 16  # text, tables and charts: not a blank page


def test_the_check_sees_a_fetch_a_script_error_and_a_blank_page(tmp_path: Path) -> None:
    bad = tmp_path / "bad.html"
    bad.write_text(
        '<!DOCTYPE html><html><body style="background:#fff">'
        '<img src="https://example.invalid/x.png"><script>throw new Error("boom")</script>'
        "</body></html>"
    )
    png, requests, errors = open_offline(bad)
    assert requests == ["https://example.invalid/x.png"]
    assert any("boom" in e for e in errors) and any("x.png" in e or "ERR_" in e for e in errors)
    assert spread(png)[0] < 1  # one colour
