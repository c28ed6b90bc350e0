"""A run read on a second thread while this one imports what judges it.

polars' reader (Rust) releases the GIL, so in a fresh process the read runs alongside the
imports a diagnosis needs next anyway instead of before them: `rl-advisor diagnose` starts it
before it imports the API (the job's schema, the rulebooks from their cache) and the
engine (numpy, ~45 ms); `api.diagnose` before the engine. polars itself is imported on the
caller's thread first: its import holds the GIL, and the read can only start once it is done.

This module imports only what reading imports (advisor.ingest, advisor.types: no pydantic).
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Any

from advisor import ingest, lazy
from advisor.types import Run


class Reading:
    """`ingest.load_run(metrics)`, started on a second thread when something is left to
    import (a fresh process), else read when `run()` asks (a batch worker: nothing to
    overlap)."""

    def __init__(self, metrics: Path) -> None:
        self.metrics = metrics
        self._got: list[Any] = []  # the Run, or what load_run raised
        self._thread: threading.Thread | None = None
        if "advisor.engine" in sys.modules:
            return
        lazy.polars  # noqa: B018  (imported here, see above)
        # a daemon: on an interrupt (it reaches this thread) the process does not wait for it
        self._thread = threading.Thread(target=self._read, name="rl-advisor-read", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:
            self._got.append(ingest.load_run(self.metrics))
        except BaseException as err:  # handed to the caller's thread, raised there
            self._got.append(err)

    def reading(self) -> bool:
        """The read is still going on (on its thread): time the caller can use."""
        return self._thread is not None and self._thread.is_alive()

    def run(self) -> Run:
        """The run; what load_run raised is raised here, as it was raised."""
        if self._thread is None:
            return ingest.load_run(self.metrics)
        self._thread.join()
        got = self._got[0]
        if isinstance(got, BaseException):
            raise got
        return got  # type: ignore[no-any-return]
