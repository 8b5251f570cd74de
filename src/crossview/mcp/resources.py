"""Resources (the bundles under the roots and their artifacts) and the cross-view prompt."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from crossview.mcp.cache import AnalysisCache
from crossview.mcp.jsonout import dumps
from crossview.mcp.safety import Refused, short
from crossview.store import stdlib


def list_bundles(cache: AnalysisCache) -> str:
    """Each root and its top-level entries: a folder is a bundle, a file a single capture."""
    out: list[dict[str, Any]] = []
    for r in cache.roots.roots:
        entries = []
        for p in sorted(r.iterdir()):
            if p.name.startswith("."):
                continue
            real = p.resolve()
            if not real.is_relative_to(r):
                continue  # a symlink leading out of the root is not offered
            entries.append({"name": p.name, "kind": "bundle" if p.is_dir() else "file",
                            "bytes": p.stat().st_size if p.is_file() else None})
        out.append({"root": str(r), "entries": entries})
    return dumps(out)


def views_catalog() -> str:
    """The named views MCP `query` reads (store/stdlib): each with its summary and every
    column with its unit, plus the relations the analysis provides (steps, step_idle)."""
    return dumps({"note": "Named views cover every artifact of the store (filter in WHERE); "
                  "a view's `filtered_form` (f_kernels, …) is the same view under the "
                  "query's filter, as steps and step_idle follow it (as analyze does).",
                  "views": [v.to_dict() for v in stdlib.catalog()]})


def bundle_artifacts(cache: AnalysisCache, name: str) -> str:
    """The artifacts of one bundle (a top-level entry of the first root that has it): what
    each file was read as, its status and problems, events read.

    Only what `list_bundles` offers is reachable: one path component, not hidden, whose real
    path is inside its root. The caller (server.py) runs this under the roots guard like a
    tool, so a file reached through a symlink inside the bundle is refused where it is
    opened (sources/guard.check_open) and its report says only that."""
    if not name or name != Path(name).name or name.startswith(".") or "\0" in name:
        raise Refused(f"{short(name)}: not a bundle name (a top-level entry of a root, as "
                      "crossview://bundles lists them)")
    for r in cache.roots.roots:
        entry = r / name
        if entry.exists() or entry.is_symlink():
            if not entry.resolve(strict=False).is_relative_to(r):
                raise Refused(f"{short(name)}: leads outside the allowed roots (symlinks are "
                              "resolved): not read")
            e = cache.get([str(entry)], None)
            return dumps({"bundle": str(e.paths[0]),
                          "artifacts": [a.to_dict() for a in e.analysis.artifacts]})
    raise Refused(f"{short(name)}: no such bundle under the roots")


PROTOCOL = """Diagnose why this GPU workload is slow with the crossview tools, on {paths}.
Follow the cross-view protocol; cite the tool, the artifact and the number for every claim.

1. Scope: `topentities` — which process / rank / device / stream holds the GPU and CPU time.
   Pick a `filter` (device, stream, pid, window_ns…) and reuse the echoed `filter` exactly
   in every later call.
2. Metrics first: `gpu_metrics` — GPU busy vs idle, kernel time, launches, families,
   counters and % of speed-of-light. Decide the regime (GPU-bound, launch/host-bound,
   idle/sync-bound, communication-bound) from the numbers before reading any tree.
3. GPU view: `hot_traces` view=gpu — which host stacks launched the kernel time (`→ kernel`
   leaves); `kernels` when ncu data exists for the roofline of the hot kernels.
4. CPU view cross-check: `hot_traces` view=cpu with the same filter, and `topfunctions` —
   does host time explain the GPU idle time (syncs, launch overhead, Python, data loading)?
   The two views must tell the same story; say where they disagree.
5. Recap: `analyze` — ranked findings with evidence and fixes; check each against steps 2–4.
6. Verify a change: `diff` two captures, `ab_compare` benchmark trials; `sol_bounds` for the
   LLM speed-of-light. Use `query` (read-only SQL over the named views of
   crossview://views: kernel_launches, step_idle, collectives…; f_kernel_launches, … under
   the call's filter) for a number no tool gives.
7. Several sources of one run in a folder (a bundle): `inventory` (capture problems with
   their fixes, rigor tiers), then `synthesize` — reconciliation, contradictions (say each),
   the ranked DRAFT ledger, experiment plans and the next-lever frontier.
Answer: the bottleneck, the evidence (numbers with units), the change, and where it goes.
"""


def cross_view(paths: str) -> str:
    """The cross-view protocol (conventions.md) as a step-by-step plan over these tools."""
    return PROTOCOL.format(paths=paths)
