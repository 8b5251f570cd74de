"""A longest gap that holds several causes names each (real nvFuser 2024.6 nsys export).

Its 66.22 ms gap at 537 ms holds the export's 15 `cuLibraryLoadData` calls (18,075,145 ns in
all, summed here with sqlite3 from CUPTI_ACTIVITY_KIND_RUNTIME) and ~46 ms with no host activity
recorded; the recap printed "unexplained (no host activity recorded): `cuLibraryLoadData`
18.08 ms", a label its own list contradicted. Skips without ../shared/data."""

from __future__ import annotations

import sqlite3

import pytest

from conftest import SHARED_DATA, shared_file
from crossview.analysis import analyze
from crossview.render import markdown

NVFUSER = SHARED_DATA / "nsys" / "nvfuser_h200_nsys2024.6.sqlite"


def test_gap_lists_each_cause_it_holds() -> None:
    with sqlite3.connect(shared_file(NVFUSER)) as db:
        (n, ns), = db.execute(
            "SELECT count(*), sum(r.end - r.start) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN"
            " StringIds s ON s.id = r.nameId WHERE s.value LIKE 'cuLibraryLoadData%'").fetchall()
    assert (n, ns) == (15, 18_075_145)
    a = analyze([NVFUSER])
    assert a.views.account is not None
    gaps = [g for d in a.views.account.per_device for s in d.steps for g in s.top_gaps
            if any(c.frame == "cuLibraryLoadData" for c in g.calls)]
    (g,) = gaps
    held = dict(g.causes)
    assert held["jit_compile"] == pytest.approx(ns, abs=1000)
    assert [c for c, _ in g.causes][0] == "unexplained"
    assert ("unexplained (no host activity recorded) 46.31 ms, JIT compile / autotune 18.08 ms: "
            "`cuLibraryLoadData` 18.08 ms") in markdown.render(a)


def test_first_launch_module_loads_are_startup_not_launch_overhead() -> None:
    """The same export's 19 kernels are 15 distinct ones; 9 first launches take ≥ 1 ms
    (47,308,844 ns in all: the driver loading each kernel's module on first use), recounted
    here with sqlite3 (kernel ↔ runtime call by correlationId, first launch per demangled
    name). The account charged them to "launch-API overhead" (46.42 ms); they are start-up."""
    with sqlite3.connect(shared_file(NVFUSER)) as db:
        rows = db.execute(
            "SELECT s.value, r.\"end\" - r.start FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN"
            " CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = k.correlationId JOIN StringIds s"
            " ON s.id = k.demangledName ORDER BY k.start").fetchall()
    seen: set[str] = set()
    first_slow = 0
    for name, dur in rows:
        if name not in seen:
            seen.add(name)
            first_slow += dur if dur >= 1_000_000 else 0
    assert (len(rows), len(seen), first_slow) == (19, 15, 47_308_844)
    acc = analyze([NVFUSER]).views.account
    assert acc is not None
    rows_by = {c.cause: c for c in acc.steady_state}
    assert "launch_overhead" not in rows_by or rows_by["launch_overhead"].ns < 1_000_000
    launch = next(f for f in rows_by["jit_compile"].top_frames if f.frame == "cudaLaunchKernel")
    assert 0.9 * first_slow <= launch.ns <= first_slow


def test_nvfuser_runtime_build_is_startup() -> None:
    """nvFuser 2025.1: two `FusionExecutorCache::getKernelRuntimeFor::compileNewKRT` NVTX
    ranges (278,477,728 ns, summed with sqlite3 from NVTX_EVENTS) build the kernel runtime —
    segmenting the fusion before compiling it — with the GPU idle; they read as "unexplained"
    before frames.yaml `startup` named them."""
    path = shared_file(SHARED_DATA / "nsys" / "nvfuser_h200_nsys2025.1.sqlite")
    with sqlite3.connect(path) as db:
        (ns,), = db.execute(
            "SELECT sum(\"end\" - start) FROM NVTX_EVENTS WHERE coalesce(text, (SELECT value"
            " FROM StringIds WHERE id = textId)) LIKE '%compileNewKRT'").fetchall()
    assert ns == 278_477_728
    acc = analyze([path]).views.account
    assert acc is not None
    jit = next(c for c in acc.steady_state if c.cause == "jit_compile")
    krt = next(f for f in jit.top_frames if f.frame.endswith("compileNewKRT"))
    assert krt.ns == pytest.approx(ns, rel=0.01)
