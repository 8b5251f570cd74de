"""crossview: cross-view GPU performance analysis.

The Python API (`crossview.api`, re-exported here): `analyze`, `analyze_each`, `synthesize`,
`diff`, `ab`, `to_json` and `Filter`; `crossview.capture(...)` makes a bundle;
`crossview.__version__`. Attributes are imported on first use, so `import crossview` stays
cheap (the capture hook imports it in every process).
"""

import importlib
from typing import TYPE_CHECKING
from typing import Any as _Any

if TYPE_CHECKING:
    from crossview.analysis import Analysis as Analysis
    from crossview.api import ab as ab
    from crossview.api import analyze as analyze
    from crossview.api import analyze_each as analyze_each
    from crossview.api import diff as diff
    from crossview.api import synthesize as synthesize
    from crossview.api import to_json as to_json
    from crossview.schema import SCHEMA_VERSION as SCHEMA_VERSION
    from crossview.scope.filter import Filter as Filter

    __version__: str

__all__ = ["SCHEMA_VERSION", "Analysis", "Filter", "__version__", "ab", "analyze",
           "analyze_each", "capture", "diff", "synthesize", "to_json"]

_API = {"analyze": "crossview.api", "analyze_each": "crossview.api",
        "synthesize": "crossview.api", "diff": "crossview.api",
        "ab": "crossview.api", "to_json": "crossview.api", "Filter": "crossview.scope.filter",
        "Analysis": "crossview.analysis", "SCHEMA_VERSION": "crossview.schema"}


def __getattr__(name: str) -> _Any:
    # lazy: `crossview.capture(...)` must not import torch when crossview is imported
    if name == "capture":
        return importlib.import_module("crossview.capture")
    if name in _API:
        return getattr(importlib.import_module(_API[name]), name)
    if name == "__version__":
        # lazy: `import crossview` reads no package metadata until the version is asked for
        from crossview.version import version

        return version()
    raise AttributeError(f"module 'crossview' has no attribute {name!r}")
