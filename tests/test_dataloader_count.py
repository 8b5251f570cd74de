"""The dataloader-starved sentence counts the fetches it measures (real workers0 trace).

"N DataLoader fetches took X ms inside the kernel span": X is clipped to the span, and N
counted every fetch, one of which (the first, 46 ms) ends before the first kernel — 6 named
for the 5 measured. Recomputed here from the raw JSON. Skips without ../shared/data."""

from __future__ import annotations

import gzip
import json

from conftest import SHARED_DATA, shared_file
from crossview.analysis import analyze

WORKERS0 = SHARED_DATA / "kineto" / "kineto_v100_resnet50_workers0.pt.trace.json.gz"


def test_fetch_count_is_of_fetches_inside_the_kernel_span() -> None:
    with gzip.open(shared_file(WORKERS0)) as fh:
        ev = [e for e in json.load(fh)["traceEvents"] if e.get("ph") == "X"]
    ks = [e for e in ev if e.get("cat") == "Kernel"]
    lo, hi = min(k["ts"] for k in ks), max(k["ts"] + k["dur"] for k in ks)
    fetches = [e for e in ev if str(e.get("name", "")).startswith("enumerate(DataLoader)#")]
    inside = [e for e in fetches if min(e["ts"] + e["dur"], hi) > max(e["ts"], lo)]
    assert (len(fetches), len(inside)) == (6, 5)
    f = next(f for f in analyze([WORKERS0]).findings if f.pattern == "dataloader-starved")
    assert f.observation.startswith("5 DataLoader fetches took 226.68 ms inside the kernel span")
