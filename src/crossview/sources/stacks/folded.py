"""Folded (collapsed) stacks: `outer;middle;leaf <weight>` per line.

Writers: flamegraph.pl's stackcollapse-*, inferno, py-spy `--format raw`, torch.profiler
`export_stacks`, crossview's own folded export. What a weight means is not in the format, so:
  1. a header line `# crossview: unit=<samples|ns|us|ms|s> [period=<10ms>] [view=<cpu|gpu>]`
     states it (flamegraph.pl and inferno skip such a line as invalid input, so the file stays
     usable by them);
  2. else torch.profiler `export_stacks` files (frames `file.py(12):_func`: it writes
     `file(line): func` with spaces turned into `_`) are µs — its metrics (self_cpu_time_total,
     self_cuda_time_total) are µs totals;
  3. else crossview's own folded export (export/folded.py) is ns: recognized by its `→ kernel`
     leaves, its `GPU view;` / `CPU view;` roots (`--view both`: each stack goes to its side),
     or python frames in crossview's `file.py(12): func` form (≥ 5% of the distinct frames;
     py-spy writes `func (file.py:12)`, torch `file.py(12):_func`); a CPU-view export with no
     python frame cannot be told from sample counts, so it needs the header;
  4. else the weight is a sample count (py-spy raw, perf/stackcollapse): samples, with no time
     unless `period=` says what one sample stands for.
Frames are renamed to crossview's python-location form `file(line): func`.
"""

from __future__ import annotations

import re
from pathlib import Path

from crossview.errors import InputError
from crossview.knowledge.frames import is_python_location
from crossview.sources.artifact_report import ArtifactReport
from crossview.sources.stacks import load
from crossview.sources.stacks.ingest import ingest
from crossview.sources.stacks.model import (
    EXPORT_VIEWS,
    TIME_UNITS_NS,
    Profile,
    Stack,
    duration_ns,
)
from crossview.store.store import Store

KIND = "folded"
WHAT = "folded stacks"
_LINE = re.compile(r"^(?P<stack>.*?)\s*(?<!\S)(?P<w>-?\d+(?:\.\d+)?)\s*$")
NO_STACK = "(no stack)"  # py-spy writes ` 1` for a sample with no frames
_HEADER = re.compile(r"^#\s*crossview:\s*(?P<kv>.*)$", re.IGNORECASE)
_PYSPY = re.compile(r"^(?P<func>.+) \((?P<file>[^()]+):(?P<line>\d+)\)$")
_TORCH = re.compile(r"^(?P<file>[^;]+?\.py)\((?P<line>\d+)\):_(?P<func>.+)$")
# py-spy --threads roots: `thread (29463)`, later `thread (29463): MainThread` once named
_PYSPY_THREAD = re.compile(r"^thread \((?P<tid>0x[0-9a-fA-F]+|\d+)\)(?::.*)?$")
_PYSPY_PROCESS = re.compile(r'^process (?P<pid>\d+):".*"$')
_MARKER = "→ "


def sniff(head: bytes, path: Path) -> bool:
    text = head.decode("utf-8", "replace")
    lines = [ln for ln in text.splitlines()[:60] if ln.strip()]
    if lines and len(head) >= 65536:
        lines = lines[:-1]  # the head may cut the last line
    if any(_HEADER.match(ln) for ln in lines[:3]):
        return True
    body = [ln for ln in lines if not ln.startswith("#")]
    return bool(body) and all(_LINE.match(ln) for ln in body) and any(
        ";" in ln and not ln.lstrip().startswith(("{", "[")) for ln in body)


def _header(lines: list[str], path: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for ln in lines[:3]:
        m = _HEADER.match(ln)
        if m:
            for kv in m.group("kv").split():
                k, _, v = kv.partition("=")
                out[k.strip().lower()] = v.strip()
    unit = out.get("unit", "").lower()
    if unit and unit != "samples" and unit not in TIME_UNITS_NS:
        raise InputError(path, f"header unit={unit!r}: expected samples, ns, us, ms or s")
    if out.get("view", "cpu").lower() not in ("cpu", "gpu"):
        raise InputError(path, f"header view={out['view']!r}: expected cpu or gpu")
    if "period" in out and duration_ns(out["period"]) is None:
        raise InputError(path, f"header period={out['period']!r}: expected a duration (10ms)")
    return out


def _frame(name: str, torch_style: bool) -> str:
    m = (_TORCH if torch_style else _PYSPY).match(name)
    return f"{m['file']}({m['line']}): {m['func']}" if m else name


def read(path: Path, store: Store) -> ArtifactReport:
    path = Path(path)
    text = load.text(path)
    lines = text.splitlines()
    partial: list[str] = []
    if lines and not text.endswith(("\n", "\r")):
        # folded files end with a newline: without one the last line was cut short
        lines.pop()
        partial.append(f"partial: the last line ({len(lines) + 1:,}) ends without a newline — "
                       "cut short: left out")
    head = _header(lines, path)
    rows: list[tuple[list[str], float]] = []
    bad: list[int] = []
    for no, ln in enumerate(lines, 1):
        if not ln.strip() or ln.startswith("#"):
            continue
        m = _LINE.match(ln)
        if not m:
            bad.append(no)
            continue
        w = float(m["w"])
        if w < 0:
            raise InputError(path, f"line {no}: negative weight {m['w']} (a folded weight is a "
                             "sample count or a time, never below 0)")
        rows.append((m["stack"].split(";") if m["stack"] else [NO_STACK], w))
    if not rows:
        if bad:
            raise InputError(path, f"not folded stacks: no line is `frame;frame;… <weight>` "
                             f"(line {bad[0]} is not)", "unsupported")
        raise InputError(path, "folded stacks file holds no stacks (empty)", "empty")
    if all(re.search(r"\s\d+(\.\d+)?$", f[-1]) for f, _ in rows):
        raise InputError(path, "differential folded stacks (two counts per line) are not "
                         "read: fold one profile at a time", "unsupported")

    frames = {f for fs, _ in rows for f in fs}
    torch_style = sum(1 for f in frames if _TORCH.match(f)) >= 0.5 * len(frames)
    own_export = (sum(1 for fs, _ in rows if fs[-1].startswith(_MARKER) or fs[0] in
                      EXPORT_VIEWS) >= 0.5 * len(rows)
                  or sum(1 for f in frames if is_python_location(f)) >= 0.05 * len(frames))
    unit = head.get("unit", "").lower() or ("us" if torch_style else "ns" if own_export
                                            else "samples")
    period = duration_ns(head["period"]) if "period" in head else None
    if unit == "samples" and max(w for _, w in rows) >= 2**31:
        raise InputError(path, "weights too large to be sample counts: state their unit with "
                         "a first line `# crossview: unit=ns` (or us, ms, s)")
    view = head.get("view", "").lower() or None  # else the leaves decide (leaves.py)
    stacks: list[Stack] = []
    renamed: dict[str, str] = {}  # each distinct frame renamed once
    for fs, w in rows:
        pid = tid = None
        sview = EXPORT_VIEWS.get(fs[0]) if len(fs) > 1 else None
        if sview:
            fs = fs[1:]
        while fs and (mp := _PYSPY_PROCESS.match(fs[0])):
            pid, fs = mp["pid"], fs[1:]
        while fs and (mt := _PYSPY_THREAD.match(fs[0])):
            tid, fs = mt["tid"], fs[1:]
        if not fs:
            continue
        names = tuple(renamed[f] if f in renamed else renamed.setdefault(
            f, _frame(f, torch_style)) for f in fs)
        if unit == "samples":
            stacks.append(Stack(names, round(w * period) if period else 0, round(w), pid, tid,
                                sview))
        else:
            stacks.append(Stack(names, round(w * TIME_UNITS_NS[unit]), 1, pid, tid, sview))
    notes = []
    if unit == "samples" and not period:
        notes.append("weights are sample counts and the file does not say the sampling period"
                     " (add `# crossview: unit=samples period=10ms` as the first line): shares"
                     " are sample shares, no time")
    if torch_style and "unit" not in head:
        notes.append("torch.profiler export_stacks: weights read as µs of the exported metric"
                     " (self CPU time unless `# crossview: view=gpu` says it is CUDA time)")
    if bad:
        notes.append(f"{len(bad):,} line(s) skipped that are not `stack weight` "
                     f"(first: line {bad[0]})")
    prof = Profile(stacks, "samples" if unit == "samples" else unit, view, notes,
                   partial=partial)
    return ingest(store, path, KIND, prof, WHAT)
