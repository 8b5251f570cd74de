"""What sampled host stacks were doing by the language runtime's own frames (rigor L1): start-up
work (JIT compilation, code loading: frames.yaml `startup`), garbage collection (frames.yaml
`gc`) and the OS kernel (a `[kernel.kallsyms]` leaf, as nsys names unresolved kernel frames).

A sample counts once, in the first of: reporting an uncaught error (frames.yaml `error_exit`:
the program is failing, whatever ran below), garbage collection (a collection triggered while
code compiles or loads is collection time), start-up, OS kernel. A stack the sampler could not
unwind (nsys roots it at `[Broken backtraces]`) lacks its callers, so every share is a lower
bound; how many are broken is counted and said.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from crossview.knowledge import frames as frame_rules
from crossview.store.store import Store
from crossview.units import duration
from crossview.views.host.calltree import _Frames

BROKEN = "[Broken backtraces]"  # nsys's root for a stack it could not unwind
OS_KERNEL = "[kernel.kallsyms]"  # nsys's name for an unresolved kernel-mode frame
# (id, words) in the order a sample is given to the first that holds it
KINDS = (("error_exit", "reporting an uncaught error"), ("gc", "garbage collection"),
         ("startup", "start-up (JIT compilation, code loading)"), ("os_kernel", "the OS kernel"))
TOP = 3  # frames named per kind


@dataclass
class RuntimeShare:
    kind: str  # KINDS id
    what: str
    ns: int = 0
    samples: int = 0
    # the matching frames nearest the leaf, with their sampled time (most first)
    top: list[tuple[str, int]] = field(default_factory=list)


@dataclass
class SampledRuntime:
    samples: int
    total_ns: int
    broken_samples: int
    runtime: str | None  # the language runtime the frames belong to (frames.yaml runtimes)
    shares: list[RuntimeShare]  # in KINDS order, those holding a sample

    def share(self, kind: str) -> RuntimeShare | None:
        return next((s for s in self.shares if s.kind == kind), None)

    def pct(self, s: RuntimeShare) -> float:
        return 100.0 * s.ns / self.total_ns if self.total_ns else 0.0

    def _head(self) -> str:
        who = f", a {self.runtime.capitalize()} process" if self.runtime else ""
        return (f"Of {self.samples:,} CPU samples (~{duration(self.total_ns)} of sampled thread "
                f"time{who})")

    def _broken(self) -> str:
        return (f"{self.broken_samples:,} samples ({100 * self.broken_samples / self.samples:.1f}%)"
                f" have stacks the sampler could not unwind (`{BROKEN}`)")

    def describe(self) -> str:
        """The breakdown, largest first, each share with its time and top frames."""
        parts = [f"{duration(s.ns)} ({self.pct(s):.1f}%) {s.what}"
                 + (f" [{', '.join(f'`{_short(f)}` {duration(t)}' for f, t in s.top)}]"
                    if s.kind != "os_kernel" else "") for s in self.by_size()]
        text = f"{self._head()}: " + ("; ".join(parts) or "none in start-up, collection or "
                                      "kernel frames") + "."
        if self.broken_samples:
            text += (f" {self._broken()}: their callers are missing, so the start-up and "
                     "collection shares are lower bounds.")
        return text

    def summary(self) -> str:
        """One sentence: the shares alone (the key finding)."""
        # a broken stack can hide a start-up or collection caller, never its own leaf
        parts = [f"{'≥ ' if self.broken_samples and s.kind != 'os_kernel' else ''}"
                 f"{self.pct(s):.1f}% {s.what}" for s in self.by_size()]
        text = f"{self._head()}: {', '.join(parts)}."
        if self.broken_samples:
            text += f" {self._broken()}, hence the lower bounds."
        return text

    def by_size(self) -> list[RuntimeShare]:
        return sorted(self.shares, key=lambda s: (-s.ns, s.kind))

    def to_dict(self) -> dict[str, object]:
        return {"samples": self.samples, "total_ns": self.total_ns,
                "broken_samples": self.broken_samples, "runtime": self.runtime,
                "shares": [{"kind": s.kind, "what": s.what, "ns": s.ns, "samples": s.samples,
                            "top": [list(t) for t in s.top]} for s in self.shares]}


def _short(name: str, n: int = 60) -> str:
    return name if len(name) <= n else name[: n - 1] + "…"


def compute(store: Store, fr: _Frames) -> SampledRuntime | None:
    """Over the CPU samples in scope (f_samples, view cpu); None when there are none."""
    rows = store.sql("SELECT node_id, sum(weight_ns), sum(count) FROM f_samples"
                     " WHERE view = 'cpu' GROUP BY node_id").fetchall()
    if not rows:
        return None
    pats = {k: [re.compile(p) for p in frame_rules.patterns(k)]
            for k in ("error_exit", "gc", "startup")}
    shares = {k: RuntimeShare(k, what) for k, what in KINDS}
    tops: dict[str, dict[str, int]] = {k: {} for k, _ in KINDS}
    total = samples = broken = 0
    names: set[str] = set()
    for node, w, c in rows:
        w, c = int(w), int(c)
        total += w
        samples += c
        path = [fr.info[n][1] for n in fr.path(int(node))]
        names.update(path)
        if path and path[0] == BROKEN:
            broken += c
        kind, frame = _kind(path, pats)
        if kind is None:
            continue
        s = shares[kind]
        s.ns += w
        s.samples += c
        tops[kind][frame] = tops[kind].get(frame, 0) + w
    for k, s in shares.items():
        s.top = sorted(tops[k].items(), key=lambda t: (-t[1], t[0]))[:TOP]
    return SampledRuntime(samples, total, broken, frame_rules.runtime_of(sorted(names)),
                          [s for s in shares.values() if s.samples])


def _kind(path: list[str], pats: dict[str, list[re.Pattern[str]]]) -> tuple[str | None, str]:
    """The kind a stack (root first) counts in, and the frame that puts it there (the matching
    frame nearest the leaf)."""
    for kind in ("error_exit", "gc", "startup"):
        hit = next((f for f in reversed(path) if any(p.search(f) for p in pats[kind])),
                   None)
        if hit is not None:
            return kind, hit
    if path and path[-1] == OS_KERNEL:
        return "os_kernel", OS_KERNEL
    return None, ""
