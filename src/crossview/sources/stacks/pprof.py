"""pprof profiles (github.com/google/pprof proto/profile.proto): Go pprof, Parca, Pyroscope.

Gzip'd (`.pb.gz`, the usual form) or not. Decoded with `protowire` (hand-written, no generated
code). A sample's `location_id[0]` is its leaf; a location's `line[0]` its innermost inlined
function, so the stack root → leaf is the locations reversed, each one's lines reversed.

Which value is time: the default sample type when it is time, else the first sample type with a
time unit (Go CPU: `samples/count` + `cpu/nanoseconds`); `samples/count` gives the count. A
profile with only a count takes its time from `period_type`/`period` when that is time. A
memory profile (any `bytes` unit) is refused: not time. A sample type or period type naming
gpu/cuda states the GPU view.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from crossview.errors import InputError
from crossview.sources.artifact_report import ArtifactReport
from crossview.sources.stacks import load
from crossview.sources.stacks import protowire as pw
from crossview.sources.stacks.ingest import ingest
from crossview.sources.stacks.model import TIME_UNITS_NS, Profile, Stack, python_file
from crossview.store.store import Store

KIND = "pprof"
WHAT = "pprof profile"
_GPU = re.compile(r"(?i)gpu|cuda")
_TID_KEYS = ("tid", "thread_id", "thread id", "thread")
_PID_KEYS = ("pid", "process_id", "process id")


@dataclass
class _Raw:
    strings: list[str] = field(default_factory=list)
    sample_types: list[tuple[int, int]] = field(default_factory=list)
    samples: list[memoryview] = field(default_factory=list)
    functions: dict[int, tuple[int, int]] = field(default_factory=dict)  # id → (name, file)
    locations: dict[int, tuple[list[tuple[int, int]], int, int]] = field(default_factory=dict)
    mappings: dict[int, int] = field(default_factory=dict)  # id → filename
    period_type: tuple[int, int] | None = None
    period: int = 0
    default_type: int = 0


def sniff(head: bytes, path: Path) -> bool:
    """A Profile starts with its sample types (field 1) — Go, Parca and Pyroscope write them
    first; the head must parse as protobuf up to where it was cut."""
    if head[:1] != b"\x0a":
        return False
    try:
        for num, wt, v in pw.fields(memoryview(head)):
            if num == 1 and wt == pw.LEN:
                assert isinstance(v, memoryview)
                if any(n not in (1, 2) or w != pw.VARINT for n, w, _ in pw.fields(v)):
                    return False
            elif num > 15:
                return False
    except pw.WireError as e:
        return "truncated" in str(e) or "claims" in str(e)  # cut by the head, not garbage
    return True


def _value_type(v: int | memoryview) -> tuple[int, int]:
    out = [0, 0]
    for n, _, x in pw.fields(_mv(v)):
        if n in (1, 2) and isinstance(x, int):
            out[n - 1] = x
    return out[0], out[1]


def _mv(v: int | memoryview) -> memoryview:
    if not isinstance(v, memoryview):
        raise pw.WireError("a message field is not length-delimited")
    return v


def _decode(buf: memoryview) -> _Raw:
    r = _Raw()
    for num, _, v in pw.fields(buf):
        if num == 1:
            r.sample_types.append(_value_type(v))
        elif num == 2:
            r.samples.append(_mv(v))
        elif num == 3:
            m = dict((n, x) for n, _, x in pw.fields(_mv(v)) if n in (1, 5))
            r.mappings[int(m.get(1, 0))] = int(m.get(5, 0))
        elif num == 4:
            lid, mid, addr, lines = 0, 0, 0, []
            for n, _, x in pw.fields(_mv(v)):
                if n in (1, 2, 3) and isinstance(x, int):
                    lid, mid, addr = (x if n == 1 else lid, x if n == 2 else mid,
                                      x if n == 3 else addr)
                elif n == 4:
                    ln = {k: y for k, _, y in pw.fields(_mv(x)) if k in (1, 2)}
                    lines.append((int(ln.get(1, 0)), pw.signed(int(ln.get(2, 0)))))
            r.locations[lid] = (lines, mid, addr)
        elif num == 5:
            f = {n: x for n, _, x in pw.fields(_mv(v)) if n in (1, 2, 4)}
            r.functions[int(f.get(1, 0))] = (int(f.get(2, 0)), int(f.get(4, 0)))
        elif num == 6:
            r.strings.append(pw.text(v))
        elif num == 11:
            r.period_type = _value_type(v)
        elif num == 12 and isinstance(v, int):
            r.period = pw.signed(v)
        elif num == 14 and isinstance(v, int):
            r.default_type = v
    return r


class _Names:
    """Frame names of a decoded profile, with each location's frames cached."""

    def __init__(self, path: Path, r: _Raw) -> None:
        self.path, self.r = path, r
        self.cache: dict[int, tuple[str, ...]] = {}
        self.kinds: dict[str, str] = {}

    def s(self, i: int) -> str:
        if not 0 <= i < len(self.r.strings):
            raise InputError(self.path, f"pprof: string index {i} outside the string table "
                             f"({len(self.r.strings)} strings)")
        return self.r.strings[i]

    def location(self, lid: int) -> tuple[str, ...]:
        got = self.cache.get(lid)
        if got is not None:
            return got
        if lid not in self.r.locations:
            raise InputError(self.path, f"pprof: a sample names location {lid}, not in the "
                             "profile")
        lines, mid, addr = self.r.locations[lid]
        names: list[str] = []
        for fid, line in reversed(lines):  # caller-most inlined frame first
            fname, ffile = self.r.functions.get(fid, (0, 0))
            name, file = self.s(fname) or f"function {fid}", self.s(ffile)
            python = python_file(file)
            full = f"{file}({line}): {name}" if python else name
            self.kinds[full] = "python" if python else "native"
            names.append(full)
        if not names:  # unsymbolized: the address, and its binary when the mapping says
            lib = self.s(self.r.mappings.get(mid, 0)).rsplit("/", 1)[-1]
            names.append(f"0x{addr:x}" + (f" ({lib})" if lib else ""))
        self.cache[lid] = got = tuple(names)
        return got


def _pick(path: Path, r: _Raw, s: _Names) -> tuple[int | None, int | None, float, str, str]:
    """(time index, count index, ns per time unit or per count, unit words, type names)."""
    types = [(s.s(t), s.s(u)) for t, u in r.sample_types]
    words = ", ".join(f"{t}/{u}" for t, u in types)
    if not types:
        raise InputError(path, "pprof: the profile declares no sample types")
    if any(u == "bytes" for _, u in types):
        raise InputError(path, f"pprof: a memory profile ({words}): only CPU/wall time or "
                         "sample profiles are read", "unsupported")
    timed = [i for i, (_, u) in enumerate(types) if u in TIME_UNITS_NS]
    default = next((i for i, (t, _) in enumerate(types) if r.default_type and t == s.s(
        r.default_type)), None)
    t_idx = default if default in timed else (timed[0] if timed else None)
    c_idx = next((i for i, (t, u) in enumerate(types) if u == "count" and t == "samples"),
                 next((i for i, (_, u) in enumerate(types) if u == "count"), None))
    if t_idx is not None:
        return t_idx, c_idx, TIME_UNITS_NS[types[t_idx][1]], types[t_idx][1], words
    pu = s.s(r.period_type[1]) if r.period_type else ""
    if c_idx is not None and pu in TIME_UNITS_NS and r.period > 0:
        return None, c_idx, r.period * TIME_UNITS_NS[pu], f"samples × {r.period} {pu}", words
    if c_idx is not None:
        return None, c_idx, 0.0, "samples", words
    raise InputError(path, f"pprof: no time or count sample type ({words})", "unsupported")


def _stacks(path: Path, r: _Raw, s: _Names) -> tuple[list[Stack], str, str]:
    t_idx, c_idx, scale, unit, words = _pick(path, r, s)
    out: list[Stack] = []
    for k, buf in enumerate(r.samples):
        locs: list[int] = []
        vals: list[int] = []
        pid = tid = None
        for n, wt, v in pw.fields(buf):
            if n == 1:
                locs += pw.ints(wt, v)
            elif n == 2:
                vals += [pw.signed(x) for x in pw.ints(wt, v)]
            elif n == 3:
                lab = {a: b for a, _, b in pw.fields(_mv(v))}
                key = s.s(int(lab.get(1, 0))).lower()
                val = s.s(int(lab[2])) if lab.get(2) else str(pw.signed(int(lab.get(3, 0))))
                if key in _TID_KEYS:
                    tid = val
                elif key in _PID_KEYS:
                    pid = val
        if len(vals) != len(r.sample_types):
            raise InputError(path, f"pprof: sample {k} has {len(vals)} values for "
                             f"{len(r.sample_types)} sample types")
        if any(x < 0 for x in vals):
            raise InputError(path, f"pprof: sample {k} has a negative value {min(vals)}")
        if not locs:
            continue
        frames = tuple(f for lid in reversed(locs) for f in s.location(lid))
        count = vals[c_idx] if c_idx is not None else 1
        w = vals[t_idx] * scale if t_idx is not None else count * scale
        out.append(Stack(frames, round(w), count, pid, tid))
    return out, unit, words


def read(path: Path, store: Store) -> ArtifactReport:
    path = Path(path)
    raw = load.data(path)
    try:
        r = _decode(memoryview(raw))
        if not r.strings or r.strings[0] != "":
            raise InputError(path, "not a pprof profile: no string table starting with the "
                             "empty string", "unsupported")
        names = _Names(path, r)
        stacks, unit, words = _stacks(path, r, names)
    except pw.WireError as e:
        raise InputError(path, f"pprof: not a valid protobuf profile ({e})") from None
    except (TypeError, ValueError, AttributeError) as e:  # valid wire data, wrong field types
        raise InputError(path, f"pprof: not a pprof profile (a field has the wrong type: "
                         f"{e})") from None
    gpu = _GPU.search(words) or (r.period_type and _GPU.search(
        names.s(r.period_type[0]) + names.s(r.period_type[1])))
    notes = [f"pprof sample types: {words}"]
    if unit == "samples":
        notes.append("sample counts with no period: shares by samples, no time")
    return ingest(store, path, KIND, Profile(stacks, unit, "gpu" if gpu else None, notes,
                                            names.kinds), WHAT)
