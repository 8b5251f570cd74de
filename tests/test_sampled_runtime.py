"""Sampled host time by the language runtime's own frames, on the real JACC (Julia) nsys CPU
sampling export: the samples are recounted here from SAMPLING_CALLCHAINS with plain string
tests written apart from frames.yaml — a sample is an error report when a frame on its stack is
Julia's `display_error`, else garbage collection when a frame on its stack
is one of Julia's collector functions, else start-up when a frame is a compiler / code-loading
one, else OS kernel when its leaf is a kernel address; `[Broken backtraces]` roots are counted."""

from __future__ import annotations

import sqlite3
from collections import defaultdict

import pytest

from conftest import SHARED_DATA, SHARED_DATA_ABSENT
from crossview.analysis import analyze
from crossview.render import markdown

JACC = SHARED_DATA / "nsys" / "jacc_a100_cpu_sampling_nsys2026.2.sqlite"
pytestmark = pytest.mark.skipif(not JACC.exists(), reason=SHARED_DATA_ABSENT)

GC_PREFIXES = ("gc_mark", "gc_sweep", "gc_collect", "jl_gc_", "ijl_gc_", "_jl_gc_")
STARTUP_PREFIXES = (
    "jl_compile", "ijl_compile", "jl_emit", "jl_type_infer", "typeinf", "julia_typeinf",
    "julia_run_passes", "JuliaOJIT::", "jl_restore_", "ijl_restore_", "jl_read_reloclist",
    "jl_method_table_activate", "jl_insert_backedges", "julia_store_backedges",
    "julia__insert_backedges", "julia_verify_method", "julia_verify_call", "llvm::", "NewPM::")


def _recount() -> tuple[int, dict[str, int]]:
    con = sqlite3.connect(f"file:{JACC}?mode=ro", uri=True)
    names = dict(con.execute("SELECT id, value FROM StringIds"))
    stacks: dict[int, list[tuple[str, str]]] = defaultdict(list)  # leaf first
    for cid, sym, mod in con.execute("SELECT id, symbol, module FROM SAMPLING_CALLCHAINS"
                                     " ORDER BY id, stackDepth"):
        stacks[cid].append((names.get(sym, ""), names.get(mod, "")))
    samples = con.execute("SELECT id FROM COMPOSITE_EVENTS").fetchall()
    out = {"error_exit": 0, "gc": 0, "startup": 0, "os_kernel": 0, "broken": 0}
    for (cid,) in samples:
        st = stacks[cid]
        syms = [s for s, _ in st]
        if syms and syms[-1] == "[Broken backtraces]":
            out["broken"] += 1
        if any(s.startswith(("julia_display_error", "jfptr_display_error")) for s in syms):
            out["error_exit"] += 1
        elif any(s.startswith(GC_PREFIXES) for s in syms):
            out["gc"] += 1
        elif any(s.startswith(STARTUP_PREFIXES) for s in syms):
            out["startup"] += 1
        elif st and st[0][1] == "[kernel.kallsyms]":
            out["os_kernel"] += 1
    return len(samples), out


def test_jacc_breakdown_and_capture_window_red() -> None:
    n, want = _recount()
    assert n == 5094 and want == {"error_exit": 106, "gc": 681, "startup": 1709,
                                  "os_kernel": 775, "broken": 1273}
    a = analyze([JACC])
    assert a.views is not None
    rt = a.views.sampled_runtime
    assert rt is not None and rt.runtime == "julia"
    assert (rt.samples, rt.broken_samples) == (n, want["broken"])
    got = {s.kind: s.samples for s in rt.shares}
    assert got == {k: want[k] for k in ("error_exit", "gc", "startup", "os_kernel")}
    # every sample weighs the same period here, so the time shares are the sample shares
    pct = {k: 100 * want[k] / n for k in ("gc", "startup", "os_kernel")}
    (red,) = [f for f in a.findings if f.severity == "red"]
    assert red.pattern == "capture-window" and red.rigor == "L1"
    assert f"at least {pct['startup']:.1f}% of the sampled host time" in red.title
    assert "CUDA.@profile external=true" in red.fix and "PrecompileTools.jl" in red.fix
    assert red.fix.startswith("First make the run succeed")  # the run threw (error_exit)
    key = markdown.render(a).split("**Key findings**", 1)[1].split("\n\n", 1)[0]
    assert (f"≥ {pct['startup']:.1f}% start-up (JIT compilation, code loading), "
            f"{pct['os_kernel']:.1f}% the OS kernel, ≥ {pct['gc']:.1f}% garbage collection"
            in key)
    assert f"{want['broken']:,} samples ({100 * want['broken'] / n:.1f}%)" in key
