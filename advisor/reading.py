"""A run read on a second thread while this one does what does not need the run.

polars' reader (Rust) releases the GIL, so the read runs alongside Python work. The command
starts it as soon as polars is imported (`rl-advisor diagnose`: before it imports the API, the
engine and the report's renderer, and parses the job file); `api.diagnose` once the engine is
imported, alongside the job file's parse (a diagnosis without a job file reads on the caller's
thread: nothing to overlap). numpy is imported before the read starts, at the command's first
level (advisor.cli): imported deep in the call stack while another thread of the process runs,
its import would map and unmap a frame-stack page ~1,200 times, each unmapping a TLB flush on
every CPU that thread ran on. polars itself is imported on the caller's thread before the read:
its import holds the GIL, and the read can only start once it is done.

A small file (`small_read`) is read by one polars thread when the command starts in a fresh
process: the read stays hidden behind the imports it overlaps (~150 ms of the main thread's
work; one thread parses ~200 MB/s), and a pool of threads would only compete with the main
thread for its cores (on 2 cores, ~12 ms of a 2,000-step diagnose). A larger file keeps every
core: there the read is the longer of the two.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from advisor import ingest, lazy
from advisor.types import Run

# The largest file `small_read` says small (see above).
SMALL_READ = 32 << 20


def small_read(metrics: Path) -> bool:
    """`metrics` is a regular file of at most SMALL_READ bytes."""
    try:
        return metrics.is_file() and metrics.stat().st_size <= SMALL_READ
    except (OSError, ValueError):
        return False


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
