"""Pool workers end with the crossview process that made them, however it ends (issue 43).

A `ProcessPoolExecutor` worker started by the forkserver waits on a queue whose write end
every worker also holds: when the parent is killed with SIGKILL nothing closes it, and the
workers, the forkserver and the resource tracker stayed alive (20+ minutes, ~290 MB each).
Each worker runs `watch(parent_pid)` as its initializer: a daemon thread waits for the parent
to end (a pidfd on Linux; else a 1 s poll) and then ends the worker and its forkserver (the
worker's own parent, useless once the crossview process is gone); the resource tracker then
sees every holder of its pipe gone and exits by itself.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import threading
import time

_POLL_S = 1.0


def watch(parent: int) -> None:
    """Pool initializer: start the thread that ends this worker when `parent` ends."""
    threading.Thread(target=_wait_then_exit, args=(parent,), daemon=True,
                     name="crossview-lifeline").start()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _wait_then_exit(parent: int) -> None:
    fd = None
    with contextlib.suppress(AttributeError, OSError):
        fd = os.pidfd_open(parent)  # readable once the process has ended
    if fd is not None:
        select.select([fd], [], [])
    else:
        while _alive(parent):
            time.sleep(_POLL_S)
    server = os.getppid()  # the forkserver this worker was forked from
    if server not in (1, parent):
        with contextlib.suppress(OSError):
            os.kill(server, signal.SIGTERM)
    os._exit(1)
