"""The store's checkpoint on a second thread while the nsys reader prepares its next rows.

DuckDB compresses a compressed store's new rows at a checkpoint (`Store.compact`), on one
core: host_ops after the host phase, then each batch of gpu_ops (1 M kernels: ~0.3 s and
~0.15 s per 245,760-row batch, beside an idle second core). What the reader does next until
its next write to the store (stage the other GPU tables, find the launch link, build the next
kernel batch in numpy) reads and writes temp and scratch tables only, which DuckDB lets run
during a checkpoint of the compressed catalog (a write to it waits for the checkpoint). So
`compact` starts the checkpoint on a cursor of its own thread and `wait` joins it before the
next write, re-raising its error.

Only on an export small enough that the kernel table was prefetched (sources/nsys/prefetch.py):
a batch built beside a running checkpoint is held beside that batch's uncompressed rows, and
the 5 M-kernel export's peak is in those inserts (bench/README.md). Otherwise `compact` runs
inline, as before. Same store either way (tests/test_nsys_compact_behind.py).
"""

from __future__ import annotations

import threading

from crossview.store.store import Store


class Behind:
    """`compact()` then `wait()` before the next write to the store; `on`: on a thread."""

    def __init__(self, store: Store, on: bool) -> None:
        self.store = store
        self.on = on and store.compressed
        self._cursor: Store | None = None
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    def compact(self) -> None:
        """Compress what was inserted: on the thread (after any previous one), or inline."""
        self.wait()
        if not self.on:
            self.store.compact()
            return
        if self._cursor is None:
            self._cursor = self.store.cursor()
        cursor = self._cursor

        def work() -> None:
            try:
                cursor.compact()
            except BaseException as e:  # noqa: BLE001 — handed to the reader in wait()
                self._error = e

        self._thread = threading.Thread(target=work, name="nsys-compact", daemon=True)
        self._thread.start()

    def wait(self) -> None:
        """Until the running checkpoint (if any) is done; its error, if it failed."""
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    def close(self) -> None:
        """Wait, then close the cursor (errors of a checkpoint still raise)."""
        try:
            self.wait()
        finally:
            if self._cursor is not None:
                self._cursor.con.close()
                self._cursor = None
