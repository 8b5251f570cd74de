"""A test pair built from one real capture (issue 39): the second side runs every GPU kernel
`factor`× longer, queued on its stream as a slower GPU would run the same launches (each GPU
op starts when launched — its recorded start — and when its stream's previous op ended), and
every `0x…` address in a host frame's name is another one, as in a second run of the same
program. Nothing else changes: same kernels, same counts, same host ops and shapes. Written
with gzip + json only (no crossview)."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

_HEX = re.compile(r"0x[0-9a-fA-F]{4,}")
_GPU = ("kernel", "gpu_memcpy", "gpu_memset")


def _other_address(m: re.Match[str]) -> str:
    return "0x" + format((int(m.group(0), 16) * 7 + 0x1000) & 0xFFFFFFFFFFFF, "x")


def write(src: Path, dst: Path, factor: float, readdress: bool = True) -> Path:
    with gzip.open(src, "rt") as f:
        doc = json.load(f)
    events = doc["traceEvents"]
    gpu = sorted((e for e in events if e.get("ph") == "X"
                  and str(e.get("cat", "")).lower() in _GPU),
                 key=lambda e: (float(e["ts"]), str(e.get("name"))))
    free: dict[tuple[object, object], float] = {}  # (device, stream) → when its last op ends
    for e in gpu:
        lane = (e.get("pid"), e.get("tid"))
        if str(e.get("cat", "")).lower() == "kernel":
            e["dur"] = float(e["dur"]) * factor
        e["ts"] = max(float(e["ts"]), free.get(lane, float("-inf")))
        free[lane] = float(e["ts"]) + float(e["dur"])
    if readdress:
        for e in events:
            if isinstance(e.get("name"), str):
                e["name"] = _HEX.sub(_other_address, e["name"])
    with gzip.open(dst, "wt") as f:
        json.dump(doc, f)
    return dst
