"""crossview: cross-view GPU performance analysis."""

from typing import Any as _Any


def __getattr__(name: str) -> _Any:
    # lazy: `crossview.capture(...)` must not import torch when crossview is imported
    if name == "capture":
        import importlib
        return importlib.import_module("crossview.capture")
    raise AttributeError(f"module 'crossview' has no attribute {name!r}")
