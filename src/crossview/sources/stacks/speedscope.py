"""speedscope JSON (https://www.speedscope.app/file-format-schema.json), py-spy's default output.

`shared.frames` holds the frames; each profile is one thread (py-spy names it `Thread <tid>`):
  - "sampled": `samples[i]` is a stack of frame indices, root first, `weights[i]` its weight;
  - "evented": `O`/`C` (open/close frame) events at `at`; the time between two events belongs
    to the stack open then, so each distinct stack becomes one row with its self time and the
    number of intervals as its count.
Units: seconds / milliseconds / microseconds / nanoseconds are time; "none" is a sample count
with no time; "bytes" (a memory profile) is refused.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import replace
from pathlib import Path
from typing import Any

import msgspec

from crossview.errors import InputError
from crossview.sources import guard
from crossview.sources.artifact_report import ArtifactReport
from crossview.sources.stacks import load
from crossview.sources.stacks.folded import NO_STACK
from crossview.sources.stacks.ingest import ingest
from crossview.sources.stacks.model import (
    EXPORT_VIEWS,
    TIME_UNITS_NS,
    Profile,
    Stack,
    python_file,
)
from crossview.store.store import Store

KIND = "speedscope"
WHAT = "speedscope profile"
_SCHEMA = b"speedscope.app/file-format-schema"
_THREAD = re.compile(r"^Thread (?P<tid>\d+|0x[0-9a-fA-F]+)\b")


def sniff(head: bytes, path: Path) -> bool:
    return _SCHEMA in head[:4096] and head.lstrip()[:1] == b"{"


def _frame_names(path: Path, frames: Any) -> tuple[list[str], dict[str, str]]:
    if not isinstance(frames, list):
        raise InputError(path, "speedscope: shared.frames is not a list")
    names: list[str] = []
    kinds: dict[str, str] = {}
    for i, f in enumerate(frames):
        if not isinstance(f, dict) or not isinstance(f.get("name"), str):
            raise InputError(path, f"speedscope: shared.frames[{i}] has no name")
        file, line = f.get("file"), f.get("line")
        python = python_file(file)
        name = f"{file}({int(line)}): {f['name']}" if python and isinstance(
            line, int | float) else f["name"]
        if python:  # other kinds follow from the name (leaves.frame_kind)
            kinds[name] = "python"
        names.append(name)
    return names, kinds


def _scale(path: Path, prof: dict[str, Any]) -> float | None:
    unit = prof.get("unit")
    if unit == "none":
        return None
    if unit == "bytes":
        raise InputError(path, "speedscope: a memory profile (unit bytes): only time or "
                         "sample profiles are read", "unsupported")
    if unit not in TIME_UNITS_NS:
        raise InputError(path, f"speedscope: unknown unit {unit!r}")
    return TIME_UNITS_NS[str(unit)]


def _stack(path: Path, idx: Any, names: list[str], where: str) -> tuple[str, ...]:
    try:
        return tuple(names[int(i)] for i in idx)
    except (IndexError, TypeError, ValueError):
        raise InputError(path, f"speedscope: {where}: frame index outside shared.frames "
                         f"({len(names)} frames)") from None


def _sampled(path: Path, prof: dict[str, Any], names: list[str], tid: str | None,
             scale: float | None, n: int) -> list[Stack]:
    samples, weights = prof.get("samples"), prof.get("weights")
    if not isinstance(samples, list) or not isinstance(weights, list) or len(samples) != len(
            weights):
        raise InputError(path, f"speedscope: profile {n}: samples and weights differ in length")
    out = []
    for i, (idx, w) in enumerate(zip(samples, weights, strict=True)):
        if not isinstance(w, int | float) or w < 0:
            raise InputError(path, f"speedscope: profile {n} sample {i}: weight {w!r} is not "
                             "a number ≥ 0")
        # py-spy records a sample with no frames as an empty stack: kept, so totals match
        st = _stack(path, idx, names, f"profile {n} sample {i}") if idx else (NO_STACK,)
        out.append(Stack(st, round(w * scale), 1, None, tid) if scale is not None
                   else Stack(st, 0, round(w), None, tid))
    return out


def _evented(path: Path, prof: dict[str, Any], names: list[str], tid: str | None,
             scale: float | None, n: int) -> list[Stack]:
    """Open stacks are interned as nodes of a prefix tree (parent node, frame) → node, so an
    event costs O(1) however deep the stack; the distinct stacks are materialized once at
    the end, under input_limits.yaml's depth and total-frames budgets."""
    events = prof.get("events")
    if not isinstance(events, list):
        raise InputError(path, f"speedscope: profile {n} has no events list")
    max_depth = int(guard.limit("max_stack_depth"))
    acc: dict[int, list[float]] = defaultdict(lambda: [0.0, 0])
    node_of: dict[tuple[int, int], int] = {}
    parent: list[int] = []  # node → parent node (-1: root)
    frame_of: list[int] = []
    open_: list[int] = []  # open frames, innermost last
    nodes: list[int] = []  # the node of each open prefix
    last: float | None = None
    for i, ev in enumerate(events):
        if not isinstance(ev, dict):
            raise InputError(path, f"speedscope: profile {n} event {i} is not an object")
        at, frame, kind = ev.get("at"), ev.get("frame"), ev.get("type")
        if not isinstance(at, int | float) or not isinstance(frame, int) or kind not in (
                "O", "C") or at != at or at in (float("inf"), float("-inf")):
            raise InputError(path, f"speedscope: profile {n} event {i} is not an O/C event "
                             "with a finite time")
        if last is not None and at < last:
            raise InputError(path, f"speedscope: profile {n} event {i}: time goes backwards")
        if nodes and last is not None and at > last:
            a = acc[nodes[-1]]
            a[0] += at - last
            a[1] += 1
        last = at
        if kind == "O":
            if len(open_) >= max_depth:
                raise InputError(path, f"speedscope: profile {n} event {i}: stack deeper than "
                                 f"{max_depth:,} frames (input_limits.yaml max_stack_depth): "
                                 "refused")
            key = (nodes[-1] if nodes else -1, frame)
            node = node_of.get(key)
            if node is None:
                node = node_of[key] = len(parent)
                parent.append(key[0])
                frame_of.append(frame)
            open_.append(frame)
            nodes.append(node)
        elif not open_ or open_[-1] != frame:
            raise InputError(path, f"speedscope: profile {n} event {i} closes frame {frame} "
                             "that is not the innermost open frame")
        else:
            open_.pop()
            nodes.pop()
    budget = Budget(path)
    out = []
    for node, (t, c) in acc.items():
        idx: list[int] = []
        cur = node
        while cur >= 0:
            idx.append(frame_of[cur])
            cur = parent[cur]
        budget.take(len(idx))
        out.append(Stack(_stack(path, idx[::-1], names, f"profile {n}"),
                         round(t * scale) if scale is not None else 0,
                         int(c) if scale is not None else round(t), None, tid))
    return out


class Budget:
    """Frames all materialized stacks of one file may hold together (input_limits.yaml
    max_stack_frames_total): a few MB of events cannot expand to billions of frames."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.left = int(guard.limit("max_stack_frames_total"))

    def take(self, n: int) -> None:
        self.left -= n
        if self.left < 0:
            raise InputError(self.path, "stacks expand past "
                             f"{int(guard.limit('max_stack_frames_total')):,} frames in total "
                             "(input_limits.yaml max_stack_frames_total): refused")


def read(path: Path, store: Store) -> ArtifactReport:
    path = Path(path)
    try:
        doc = msgspec.json.decode(load.data(path))
    except msgspec.DecodeError as e:
        raise InputError(path, f"speedscope: not valid JSON ({e})") from None
    except RecursionError:
        raise guard.too_deep(path, "speedscope JSON") from None
    try:
        prof = _profile(path, doc)
    except (OverflowError, ValueError, TypeError) as e:  # e.g. an infinite weight or line
        raise InputError(path, f"speedscope: a value of the wrong kind ({e})") from None
    return ingest(store, path, KIND, prof, WHAT)


def _profile(path: Path, doc: Any) -> Profile:
    if not isinstance(doc, dict) or not isinstance(doc.get("profiles"), list):
        raise InputError(path, "not a speedscope file (no profiles list)", "unsupported")
    shared = doc.get("shared")
    names, kinds = _frame_names(path, shared.get("frames") if isinstance(shared, dict) else None)
    stacks: list[Stack] = []
    units: set[str] = set()
    for n, prof in enumerate(doc["profiles"]):
        if not isinstance(prof, dict):
            raise InputError(path, f"speedscope: profile {n} is not an object")
        scale = _scale(path, prof)
        units.add("samples" if scale is None else str(prof["unit"]))
        m = _THREAD.match(str(prof.get("name", "")))
        tid = m["tid"] if m else (str(prof["name"]) if len(doc["profiles"]) > 1
                                  and prof.get("name") not in (None, *EXPORT_VIEWS) else None)
        kind = prof.get("type")
        if kind == "sampled":
            got = _sampled(path, prof, names, tid, scale, n)
        elif kind == "evented":
            got = _evented(path, prof, names, tid, scale, n)
        else:
            raise InputError(path, f"speedscope: profile {n} has type {kind!r} (expected "
                             "sampled or evented)")
        pview = EXPORT_VIEWS.get(str(prof.get("name")))  # crossview's export names its views
        stacks += [replace(s, view=pview) for s in got] if pview else got
    notes = [] if "samples" not in units else [
        "some weights are sample counts (unit none): shares by samples, no time"]
    return Profile(stacks, ", ".join(sorted(units)) or "none", None, notes, kinds)
