"""Started by `crossview capture -- CMD` (this folder is first on PYTHONPATH): start the torch
profiler for this Python process (crossview/capture/child.py), then run any sitecustomize this
one shadows, so the environment behaves as it would without crossview."""

import importlib.machinery
import importlib.util
import os
import sys


def _chain() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    path = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is not None and spec.loader is not None:
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)


try:
    from crossview.capture.child import start_from_env

    start_from_env()
except Exception as e:  # the user's script runs even when the capture cannot start
    print(f"crossview capture: profiler not started: {e}", file=sys.stderr)
_chain()
