"""A run read on a second thread while this one parses the job file and readies the report.

polars' reader (Rust) releases the GIL, so the read can run alongside Python work that does
not need the run. Which work matters: every module a diagnosis needs is imported *before* the
read starts, on a process with no other thread. Importing while another thread of the process
runs makes each page the interpreter gives back (its frame stack grows and shrinks through
16 KB chunks, each mapped and unmapped) a TLB flush on every CPU that thread ran on, a costly
interrupt on a virtual machine: overlapping the imports with the read costs more than it saves.
What overlaps the read is the job file's parse and the report's templates (`api.diagnose_job`,
the command's `alongside`). polars itself is imported on the caller's thread, before the read:
its import holds the GIL, and the read can only start once it is done.

This module imports only what reading imports (advisor.ingest, advisor.types: no pydantic).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from advisor import ingest, lazy
from advisor.types import Run


class Reading:
    """`ingest.load_run(metrics)`: on a second thread from `start(alongside=True)` on, else
    read when `run()` asks (nothing to overlap)."""

    def __init__(self, metrics: Path) -> None:
        self.metrics = metrics
        self._got: list[Any] = []  # the Run, or what load_run raised
        self._thread: threading.Thread | None = None

    def start(self, alongside: bool) -> bool:
        """Start the read on its thread when the caller has work to do `alongside` it (and it
        has not started); whether it is going on now."""
        if alongside and self._thread is None:
            lazy.polars  # noqa: B018  (imported here, see above)
            # a daemon: on an interrupt (it reaches this thread) the process does not wait for it
            self._thread = threading.Thread(
                target=self._read, name="rl-advisor-read", daemon=True
            )
            self._thread.start()
        return self.reading()

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
