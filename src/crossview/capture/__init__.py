"""Capture: make the evidence bundles crossview reads.

`crossview.capture("bundle/", …)` is a context manager around any PyTorch workload
(capture/session.py); `crossview.capture.step()` marks a step boundary in whichever capture
runs in this process (in-process or `crossview capture -- python script.py`). This package
imports neither torch nor pynvml until a capture starts.
"""

from __future__ import annotations

import sys
import types
from typing import Any


def step() -> None:
    """Mark a step boundary for the running capture (no-op when none runs)."""
    # lazy: `import crossview.capture` in the user's program stays light (no torch)
    from crossview.capture.profiler import step as _step
    _step()


class _CallableModule(types.ModuleType):
    # `crossview.capture` is both this package and the context manager: once the package is
    # imported the attribute is the module, so the module itself must be callable.
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # lazy: `import crossview.capture` in the user's program stays light (no torch)
        from crossview.capture.session import capture
        return capture(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
