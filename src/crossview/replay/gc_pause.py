"""The cyclic garbage collector paused while a replay builds and re-times its graph.

A graph of ~10⁵ nodes allocates ~10⁶ small containers (constraint lists, tag sets) and holds
no reference cycles, yet each allocation burst triggers collections that rescan them all:
~10–15% of the recap's replay on hta_v100_ddp_training (decision 0743). Reference counting
still frees everything; the collector resumes (if it was running) on exit, error or not.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused() -> Iterator[None]:
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
