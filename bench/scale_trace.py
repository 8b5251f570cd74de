"""Scale a real Kineto (PyTorch profiler) trace up to a target size, for benchmarks.

    python bench/scale_trace.py SRC OUT --min-mb N [--gap-us US]

SRC is a Kineto Chrome trace (``.json`` or ``.json.gz``). OUT is written as a
plain ``.json`` file of at least N MB (1 MB = 10**6 bytes) by repeating SRC's
``traceEvents`` back to back in time, as if the profiler had kept capturing:

* repeat ``r`` is shifted later by ``r * (span + gap)``, where ``span`` is
  ``max(ts + dur) - min(ts)`` over SRC's non-metadata events, on every
  event's ``ts``;
* id fields that must stay unique are offset by ``r * stride``, with ``stride``
  one more than the largest id in SRC, so every cross-reference inside a repeat
  still resolves and nothing collides across repeats: ``args.correlation``,
  ``args["External id"]``, flow ``id`` of ``ph`` ``s``/``t``/``f`` events,
  ``args["Ev Idx"]``, ``args["Sequence number"]``, ``args["Python id"]``,
  ``args["Python parent id"]``. One common stride keeps ids that are equal in
  SRC equal after the offset: Kineto's ``ac2g`` flow id is the correlation id;
* ``ProfilerStep#N`` annotations are renumbered so step numbers continue
  (``N + r * n_steps``). HTA keys iterations on these names;
* metadata events (``ph: M``) are written once.

Every other top-level key (``schemaVersion``, ``deviceProperties``,
``distributedInfo``, ``traceName``, ...) is kept, in SRC's order, one key per
line, with ``json.dumps``' default ``": "`` separator: HTA finds the rank with
the regex ``"rank":\\s+(\\d+)`` read line by line. Events are written one per
line, streamed through a buffered file, so memory stays at roughly
the size of the parsed SRC.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import re
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any

MB = 1_000_000

#: args keys holding ids that must be unique per repeat.
ID_ARG_KEYS: tuple[str, ...] = (
    "correlation",
    "External id",
    "Ev Idx",
    "Sequence number",
    "Python id",
    "Python parent id",
)
FLOW_PHASES = frozenset({"s", "t", "f"})
STEP_RE = re.compile(r"^(ProfilerStep#)(\d+)$")


def load_trace(path: Path) -> dict[str, Any]:
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rb") as fh:
        data = json.load(fh)
    if not isinstance(data, dict) or not isinstance(data.get("traceEvents"), list):
        raise SystemExit(f"{path}: not a Kineto trace (no traceEvents list)")
    return data


def _is_id(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def analyze(events: list[dict[str, Any]]) -> tuple[float, float, int, int, int]:
    """Return (t0, t1, id_stride, first_step, n_steps) for the repeatable events."""
    t0 = math.inf
    t1 = -math.inf
    max_id = 0
    steps: list[int] = []
    for ev in events:
        ts = ev.get("ts")
        if isinstance(ts, int | float):
            t0 = min(t0, ts)
            dur = ev.get("dur")
            t1 = max(t1, ts + (dur if isinstance(dur, int | float) else 0))
        if ev.get("ph") in FLOW_PHASES and _is_id(ev.get("id")):
            max_id = max(max_id, ev["id"])
        args = ev.get("args")
        if isinstance(args, dict):
            for key in ID_ARG_KEYS:
                val = args.get(key)
                if _is_id(val):
                    max_id = max(max_id, val)
        name = ev.get("name")
        if isinstance(name, str) and name.startswith("ProfilerStep#"):
            m = STEP_RE.match(name)
            if m:
                steps.append(int(m.group(2)))
    if t0 is math.inf:
        raise SystemExit("source trace has no timestamped events")
    n_steps = (max(steps) - min(steps) + 1) if steps else 0
    return t0, t1, max_id + 1, (min(steps) if steps else 0), n_steps


def shifted(ev: dict[str, Any], dt: int, did: int, dstep: int) -> dict[str, Any]:
    """A copy of ``ev`` moved ``dt`` us later, ids offset by ``did``, steps by ``dstep``."""
    out = dict(ev)
    ts = out.get("ts")
    if isinstance(ts, int | float):
        out["ts"] = ts + dt
    if out.get("ph") in FLOW_PHASES and _is_id(out.get("id")):
        out["id"] = out["id"] + did
    args = out.get("args")
    if isinstance(args, dict):
        new_args = None
        for key in ID_ARG_KEYS:
            val = args.get(key)
            if _is_id(val):
                if new_args is None:
                    new_args = dict(args)
                new_args[key] = val + did
        if new_args is not None:
            out["args"] = new_args
    if dstep:
        name = out.get("name")
        if isinstance(name, str) and name.startswith("ProfilerStep#"):
            m = STEP_RE.match(name)
            if m:
                out["name"] = f"{m.group(1)}{int(m.group(2)) + dstep}"
    return out


class CountingWriter:
    """Binary writer that counts the bytes it has written."""

    def __init__(self, fh: IO[bytes]) -> None:
        self.fh = fh
        self.nbytes = 0

    def write(self, text: str) -> None:
        data = text.encode("utf-8")
        self.fh.write(data)
        self.nbytes += len(data)


def write_events(w: CountingWriter, events: Iterable[dict[str, Any]], first: bool) -> int:
    n = 0
    for ev in events:
        w.write(("\n  " if first else ",\n  ") + json.dumps(ev, ensure_ascii=False))
        first = False
        n += 1
    return n


def scale(src: Path, out: Path, min_mb: float, gap_us: int) -> dict[str, Any]:
    trace = load_trace(src)
    events: list[dict[str, Any]] = trace["traceEvents"]
    meta = [ev for ev in events if ev.get("ph") == "M"]
    body = [ev for ev in events if ev.get("ph") != "M"]
    t0, t1, id_stride, first_step, n_steps = analyze(body)
    period = math.ceil(t1 - t0) + gap_us
    target = int(min_mb * MB)

    keys = list(trace.keys())
    ev_pos = keys.index("traceEvents")
    head_keys, tail_keys = keys[:ev_pos], keys[ev_pos + 1 :]
    tail = "".join(f',\n"{k}": {json.dumps(trace[k])}' for k in tail_keys) + "\n}\n"

    repeats = 0
    n_events = 0
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("wb", buffering=4 * 1024 * 1024) as fh:
        w = CountingWriter(fh)
        w.write("{")
        for i, k in enumerate(head_keys):
            w.write(("\n" if i == 0 else ",\n") + f'"{k}": {json.dumps(trace[k])}')
        w.write('\n"traceEvents": [' if not head_keys else ',\n"traceEvents": [')
        n_events += write_events(w, meta, first=True)
        while w.nbytes + len(tail) + 4 < target or repeats == 0:
            dt, did, dstep = repeats * period, repeats * id_stride, repeats * n_steps
            batch = body if repeats == 0 else (shifted(ev, dt, did, dstep) for ev in body)
            n_events += write_events(w, batch, first=n_events == 0)
            repeats += 1
        w.write("\n]")
        w.write(tail)
        size = w.nbytes
    return {
        "src": str(src),
        "out": str(out),
        "bytes": size,
        "mb": size / MB,
        "repeats": repeats,
        "events": n_events,
        "src_events": len(events),
        "metadata_events": len(meta),
        "span_us": t1 - t0,
        "period_us": period,
        "id_stride": id_stride,
        "profiler_steps_per_repeat": n_steps,
        "first_step": first_step,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Repeat a Kineto trace in time up to a target size.")
    p.add_argument("src", type=Path, help="source trace (.json or .json.gz)")
    p.add_argument("out", type=Path, help="output .json path (plain JSON, put it under /tmp)")
    p.add_argument("--min-mb", type=float, required=True, help="minimum output size, 10**6 bytes")
    p.add_argument("--gap-us", type=int, default=1000, help="idle gap between repeats (us)")
    args = p.parse_args(argv)
    if args.out.name.endswith(".gz"):
        p.error("OUT is written as plain JSON; give it a .json name")

    start = time.perf_counter()
    info = scale(args.src, args.out, args.min_mb, args.gap_us)
    info["seconds"] = round(time.perf_counter() - start, 1)
    print(json.dumps(info, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
