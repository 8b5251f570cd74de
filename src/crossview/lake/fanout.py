"""Run one function over a list of per-artifact tasks: a local process pool, or Dask.

The same call either way (tasks in, results out in task order); the engine does the
scheduling. Functions and tasks must be picklable (top-level functions, dataclasses).
Dask runs are `--dask ADDRESS` (an existing scheduler; its workers must see the same paths,
e.g. a shared filesystem) or `--dask local` (a `distributed.LocalCluster` of processes).
"""

from __future__ import annotations

import logging
import multiprocessing
import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from crossview.errors import UsageError
from crossview.lake import lifeline
from crossview.store import memory

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class Engine:
    """workers: processes (0 = run in this process, serially); dask: None | 'local' | address."""

    workers: int = 0
    dask: str | None = None

    def size(self, n_tasks: int) -> int:
        return max(1, min(self.workers, n_tasks))

    def threads_per_worker(self, n_tasks: int) -> int:
        """DuckDB threads each worker may use: the cores shared out, at least one."""
        return max(1, (os.cpu_count() or 1) // self.size(n_tasks))

    def memory_per_worker(self, n_tasks: int) -> str | None:
        """DuckDB memory_limit per worker: 60% of the memory this machine lets us use (RAM,
        cgroup limit, ulimit -v: store/memory.py) shared out, so the pool
        never oversubscribes (DuckDB's own default is 80% of RAM per process). None on a
        remote Dask cluster, whose machines we do not know (DuckDB's default applies)."""
        if self.dask not in (None, "local"):
            return None
        ram = memory.usable_bytes()  # RAM, cgroup limit, ulimit -v: the least
        return f"{int(ram * 0.6 / self.size(n_tasks)) >> 20}MB"


def default_engine(workers: int | None, dask: str | None) -> Engine:
    if workers is not None and workers < 0:
        raise UsageError(f"--workers {workers}: must be 0 (in process) or more")
    return Engine((os.cpu_count() or 1) if workers is None else workers, dask)


class Mapper(Protocol):
    def __call__(self, fn: Callable[[T], R], tasks: Sequence[T],
                 on_error: Callable[[T, str], R]) -> list[R]: ...


@contextmanager
def mapper(engine: Engine, n_tasks: int) -> Iterator[Mapper]:
    """One pool or cluster for several rounds of tasks (ingest: hashes, then reads).

    A task whose worker dies (killed for memory, a crash in native code) becomes
    on_error(task, why); the other tasks' results still come back."""
    if engine.dask is not None:
        with _dask_client(engine, n_tasks) as client:
            yield lambda fn, tasks, on_error: _gather(client, fn, tasks, on_error)
    elif engine.workers == 0:
        yield lambda fn, tasks, on_error: [fn(t) for t in tasks]
    else:
        # forkserver: never fork a process that holds DuckDB's threads
        ctx = multiprocessing.get_context("forkserver")
        # each worker ends with this process, even when it is killed (lake/lifeline.py)
        with ProcessPoolExecutor(max_workers=engine.size(n_tasks), mp_context=ctx,
                                 initializer=lifeline.watch, initargs=(os.getpid(),)) as pool:
            yield lambda fn, tasks, on_error: _pool_map(pool, fn, tasks, on_error)


def fan_out(fn: Callable[[T], R], tasks: Sequence[T], engine: Engine,
            on_error: Callable[[T, str], R]) -> list[R]:
    """Run fn over tasks; results in task order."""
    if not tasks:
        return []
    with mapper(engine, len(tasks)) as run:
        return run(fn, tasks, on_error)


_DIED = ("its worker process died (killed for memory?): not read; run the same command "
         "again (files already done are skipped)")


def _pool_map(pool: ProcessPoolExecutor, fn: Callable[[T], R], tasks: Sequence[T],
              on_error: Callable[[T, str], R]) -> list[R]:
    futures: list[Future[R] | None] = []
    for t in tasks:
        try:
            futures.append(pool.submit(fn, t))
        except BrokenProcessPool:
            futures.append(None)
    out: list[R] = []
    for t, f in zip(tasks, futures, strict=True):
        try:
            if f is None:
                raise BrokenProcessPool
            out.append(f.result())
        except BrokenProcessPool:
            out.append(on_error(t, _DIED))
    return out


@contextmanager
def _dask_client(engine: Engine, n_tasks: int) -> Iterator[Any]:
    try:
        # lazy: optional dependency (distributed: extra `dask`)
        from distributed import Client, LocalCluster
    except ImportError:
        raise UsageError("--dask needs Dask: pip install 'crossview[dask]'") from None
    if engine.dask == "local":
        # the cluster's own log lines stay quiet below CRITICAL: a task's failure comes back
        # through its future (_gather), and a worker's heartbeat racing the scheduler's close
        # at the end logged an ERROR with a traceback on a loaded machine (a CI run)
        with LocalCluster(n_workers=engine.size(n_tasks), threads_per_worker=1,
                          processes=True, dashboard_address=None,
                          silence_logs=logging.CRITICAL) as cluster, \
                Client(cluster) as client:
            yield client
        return
    try:
        client = Client(engine.dask, timeout="10s")
    except (OSError, TimeoutError, ValueError) as e:
        raise UsageError(f"--dask {engine.dask}: cannot reach the scheduler ({e})") from None
    with client:
        yield client


def _gather(client: Any, fn: Callable[[T], R], tasks: Sequence[T],
            on_error: Callable[[T, str], R]) -> list[R]:
    # lazy: optional dependency (distributed: extra `dask`)
    from distributed import KilledWorker

    out: list[R] = []
    for t, f in zip(tasks, client.map(fn, list(tasks), pure=False), strict=True):
        try:
            out.append(f.result())
        except KilledWorker as e:
            out.append(on_error(t, f"its Dask worker died ({e}): not read; run the same "
                                "command again (files already done are skipped)"))
    return out
