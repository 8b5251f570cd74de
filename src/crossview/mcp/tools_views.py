"""Tools over one analysis scope: entities, metrics, call trees, frames, kernels, recap.

Each returns compact JSON text that starts with the scope (`paths`, `filter`, `resolved`):
pass `paths` and `filter` back unchanged and the next call covers exactly the same data."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Annotated, Any, Literal

from pydantic import Field

from crossview.knowledge.frames import is_user_frame
from crossview.mcp import shape, trees
from crossview.mcp.cache import AnalysisCache, Entry, FilterArg
from crossview.mcp.compact import Detail, compact, fit, with_absent
from crossview.mcp.jsonout import dumps
from crossview.mcp.safety import Refused

Paths = Annotated[list[str], Field(
    description="Capture files or folders (a bundle), inside the server's --root folders.",
    min_length=1)]
Flt = Annotated[FilterArg | None, Field(
    description="Scope: device, stream, pid, tid, window_ns, annotation, artifact. Reuse the "
    "`filter` a previous result echoed to stay on the same scope.")]
Gpu = Annotated[str | None, Field(
    description="GPU name for ncu captures that do not name it (e.g. 'RTX 5090').")]
Top = Annotated[int, Field(ge=1, le=200)]


def _out(e: Entry, **body: Any) -> str:
    """Compact JSON: the scope, then the body; null and empty fields left out."""
    return dumps(compact({**e.scope(), **body}))


def _fit(e: Entry, levels: list[Any], absent: dict[str, str] | None = None) -> str:
    """At detail=summary: the first level (scope + body) within the character budget."""
    scope = e.scope()
    return fit([partial(_scoped, scope, lv) for lv in levels], absent)


def _scoped(scope: dict[str, Any], level: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    return {**scope, **level()}


class ViewTools:
    def __init__(self, cache: AnalysisCache) -> None:
        self.cache = cache

    def topentities(self, paths: Paths, filter: Flt = None, top: Top = 20) -> str:
        """Processes, ranks, devices and streams ranked by GPU time (kernel ns, from the
        GPU timeline) and CPU time (host self ns, from the host events). Start here on a
        multi-process / multi-GPU bundle to pick the `filter` for the other tools."""
        e = self.cache.get(paths, filter)
        with e.lock:
            memo = e.memo.get(("topentities", top))
            if memo is not None:  # same store, same question: the same answer
                return _out(e, **memo)
            # lazy: the MCP server starts before any tool's work is imported (0902)
            from crossview.views.top_entities import top_entities

            s = e.analysis.views.store  # type: ignore[union-attr]
            body: dict[str, Any] = {
                **top_entities(s, top).to_dict(),
                "units": "ns; gpu_kernel_ns = sum of kernel durations (f_gpu), cpu_self_ns ="
                         " sum of host event self time (f_host); launches link a kernel to"
                         " the process that launched it",
            }
            e.memo[("topentities", top)] = body
        return _out(e, **body)

    def gpu_metrics(self, paths: Paths, filter: Flt = None, gpu: Gpu = None,
                    detail: Detail = "summary") -> str:
        """Metrics first: GPU busy/idle, kernel time, launches, kernel families, top
        kernels, hardware counters (DCGM/NVML/ncu), serving and benchmark metrics, and the
        workload's % of speed-of-light. All times in ns, shares as fractions. What the
        input cannot give is null with the reason under `absent` (never a 0)."""
        e = self.cache.get(paths, filter, gpu)
        with e.lock:
            v = e.analysis.views
            assert v is not None
            metrics = v.metrics.to_dict()
            families = [f.to_dict() for f in v.families]
            top = [k.to_dict() for k in v.top_kernels]
            counters = v.gpu_metrics.to_dict()
            sol = [s.to_dict() for s in v.workload_sol]
            arts = [dict(i.__dict__) for i in v.artifact_info]
            engine = v.engine
            # issue 15: the step summary and the steady-state time account
            steps = v.steps.to_dict()
            account = v.account.summary_dict() if v.account else None
        absent = {**shape.metrics_absent(metrics), **shape.counters_absent(counters)}

        def body(rows: int, kernels: int, stats: bool, full: bool = False) -> dict[str, Any]:
            return {"metrics": None if "metrics" in absent else (
                        metrics if full else shape.slim_metrics(metrics, rows)),
                    "kernel_families": families if full else families[:rows * 2],
                    "top_kernels": top if full else shape.slim_kernels(top, kernels),
                    "gpu_metrics": None if "gpu_metrics" in absent else (
                        counters if full else shape.slim_counters(counters, stats)),
                    "workload_sol": sol, "engine": engine, "artifacts": arts,
                    "steps": steps if full else _slim_steps(steps, 0),
                    "account": account if full else _slim_account(account, rows)}

        if detail == "full":
            return dumps(shape_absent(compact({**e.scope(), **body(0, 0, True, True)}),
                                      absent))
        return _fit(e, [lambda: body(5, 5, True), lambda: body(3, 3, True),
                        lambda: body(2, 2, False)], absent)

    def hot_traces(self, paths: Paths, view: Literal["gpu", "cpu"] = "gpu", filter: Flt = None,
                   top: Top = 5, max_depth: Annotated[int, Field(ge=1, le=64)] = 16,
                   min_share: Annotated[float, Field(ge=0, le=1)] = 0.01,
                   detail: Detail = "summary") -> str:
        """The call tree of one view. gpu: kernel time under the host stack that launched it
        (python → op → launch API → `→ kernel` leaf). cpu: host time by stack with self time.
        Keeps the `top` hottest children per node above `min_share` of the total. A chain
        of single-child frames is one node: `frame` its innermost frame, `via` the frames
        above it (elided at summary), so kernels show at the default depth."""
        e = self.cache.get(paths, filter)
        with e.lock:
            v = e.analysis.views
            assert v is not None
            tree = v.gpu if view == "gpu" else v.cpu
            units = "ns; share = fraction of the view's total_ns"
            if detail == "full":
                body = trees.pruned(tree, top, max_depth, min_share, collapse=True)
                return _out(e, view=view, units=units, tree=body)
            levels = [(top, 4), (min(top, 3), 3), (min(top, 2), 3), (1, 3)]
            bodies = [shape.clip_tree(trees.pruned(tree, t, max_depth, min_share,
                                                   collapse=True, via_frames=k))
                      for t, k in levels]
        return _fit(e, [lambda b=b: {"view": view, "units": units, "tree": b}
                        for b in bodies])

    def flamegraph(self, paths: Paths, view: Literal["gpu", "cpu"] = "gpu", filter: Flt = None,
                   limit: Annotated[int, Field(ge=1, le=5000)] = 500,
                   detail: Detail = "summary") -> str:
        """The same call tree as folded stacks (`frame;frame;→ kernel <self ns>`), hottest
        first, ready for flamegraph.pl or speedscope. `left_out_ns` is what the limit (or,
        at summary, the character budget) cut; detail=full for up to `limit` stacks."""
        e = self.cache.get(paths, filter)
        with e.lock:
            v = e.analysis.views
            assert v is not None
            tree = v.gpu if view == "gpu" else v.cpu
            lines, n, left = trees.folded(tree, limit)
        if detail == "summary":
            lines, cut_ns = trees.within(lines, budget=6_000)
            left += cut_ns
        return _out(e, view=view, total_ns=tree.total_ns, stacks=n, shown=len(lines),
                    left_out_ns=left, units="ns (self time per stack)",
                    folded="\n".join(lines))

    def topfunctions(self, paths: Paths, view: Literal["cpu", "gpu"] = "cpu",
                     filter: Flt = None, top: Top = 25, detail: Detail = "summary") -> str:
        """Hottest frames (python functions, operators, runtime calls; kernels in the gpu
        view) by self time and by total (inclusive) time, with shares of the view's total.
        `user` marks frames in the user's own code (where a change can go)."""
        e = self.cache.get(paths, filter)
        with e.lock:
            v = e.analysis.views
            assert v is not None
            tree = v.gpu if view == "gpu" else v.cpu
            rows = trees.hottest_frames(tree, top)
        for r in rows:
            r["user"] = is_user_frame(r["frame"])
        if detail == "full":
            return _out(e, view=view, total_ns=tree.total_ns, units="ns", functions=rows)
        return _fit(e, [lambda n=n: {"view": view, "total_ns": tree.total_ns, "units": "ns",
                                     "functions": shape.slim_kernels(rows, n)}
                        for n in (top, 15, 8)])

    def kernels(self, paths: Paths, gpu: Gpu = None, detail: Detail = "summary") -> str:
        """Per-kernel roofline from Nsight Compute data (.ncu-rep or ncu --csv): FLOP/s,
        bytes, % of the GPU's ceilings, bound. Refused when the input has no ncu counters.
        At summary, ncu's rule messages are cut to rule, type and estimated speedup."""
        # lazy: MCP server start-up loads no tool's work (+~1 s measured, decision 0902)
        from crossview.render.kernels import as_list

        e = self.cache.get(paths, None, gpu)
        with e.lock:
            if not e.analysis.views or not e.analysis.views.kernels:
                raise Refused(", ".join(paths) + ": no per-kernel counters (ncu) in this "
                              "input: profile with `ncu -o report …` and pass that file")
            rows = as_list(e.analysis)
        if detail == "full":
            return _out(e, kernels=rows)
        slim = [{**k, "ncu_rules": [{x: r.get(x) for x in ("rule", "type", "speedup_pct")}
                                    for r in k.get("ncu_rules") or []]}
                for k in shape.slim_kernels(rows, len(rows))]
        return _fit(e, [lambda n=n: {"kernels": slim[:n], "kernels_total": len(rows)}
                        for n in (len(slim), 8, 4, 2)])

    def analyze(self, paths: Paths, filter: Flt = None, gpu: Gpu = None,
                format: Annotated[Literal["json", "md"], Field(
                    description="json (default): findings and metrics as JSON; md: the "
                    "Markdown recap a human reads, as `crossview analyze`.")] = "json",
                detail: Detail = "summary") -> str:
        """The recap, as `crossview analyze`: ranked findings (id, severity, evidence,
        fix) and the headline metrics as JSON; format=md for the Markdown report (summary:
        the first screen, `crossview analyze`; full: with every table, `--detail full`)."""
        # lazy: MCP server start-up loads no tool's work (+~1 s measured, decision 0902)
        from crossview.render import markdown
        from crossview.render.json import as_dict

        e = self.cache.get(paths, filter, gpu)
        with e.lock:
            if format == "md":  # summary: the recap's first screen (the verdict leads)
                text = markdown.render(e.analysis, detail)
                return (_out(e, markdown=text) if detail == "full"
                        else _fit(e, [lambda: {"markdown": text}]))
            d = as_dict(e.analysis)
        absent = shape.metrics_absent(d["metrics"] or {})
        metrics = None if absent else d["metrics"]
        # issue 15: steps and the steady-state time account (no per-device detail)
        steps = d.get("steps")
        account = ({k: v for k, v in d["account"].items() if k != "per_device"}
                   if d.get("account") else None)
        ranks = _slim_ranks(d, detail == "full")  # ranks of one job (issue 42); else None
        if detail == "full":
            return dumps(shape_absent(compact({**e.scope(), "metrics": metrics,
                                               "findings": d["findings"],
                                               "artifacts": d["artifacts"],
                                               "steps": steps, "account": account,
                                               "ranks": ranks}), absent))
        found = d["findings"]
        shown = [f for f in found if f["severity"] in ("red", "yellow")]

        def body(rows: list[dict[str, Any]], chars: int) -> dict[str, Any]:
            return {"metrics": shape.slim_metrics(metrics, 3) if metrics else None,
                    "findings": [shape.slim_finding(f, chars) for f in rows],
                    "findings_total": len(found),
                    "artifacts": shape.slim_artifacts(d["artifacts"]),
                    "steps": _slim_steps(steps, 0),
                    "account": _slim_account(account, 4), "ranks": ranks}

        return _fit(e, [lambda: body(found, 600), lambda: body(shown, 400),
                        lambda: body(shown[:3], 300)], absent)


def _slim_ranks(d: dict[str, Any], full: bool) -> dict[str, Any] | None:
    """A multi-rank job in brief: the clock, its collectives' wait and transfer per rank (at
    summary: their range over the ranks), the late ranks by share with why, the cross-rank
    critical path by rank."""
    ra = d.get("rank_analysis")
    if not ra:
        return None
    late = ra.get("late_ranks") or {}
    cp = ra.get("critical_path")
    per = [{k: r.get(k) for k in ("rank", "collective_ns", "wait_ns", "transfer_ns")}
           for r in d.get("ranks", []) if r.get("wait_ns") is not None]
    spread = {f"{k}_range": [min(r[k] for r in per), max(r[k] for r in per)]
              for k in ("wait_ns", "transfer_ns")} if per else {}
    return {
        "clock": ra["clock"], "clock_note": ra["clock_note"], "partial": ra["partial"],
        **({"per_rank": per} if full else spread),
        "summed_start_spread_ns": late.get("summed_start_spread_ns"),
        "late_ranks": [{"rank": r["rank"], "share": round(r["share"], 4),
                        "last_at": r["last_at"], "group_wait_ns": r["group_wait_ns"],
                        "why": _why(r.get("cause"))}
                       for r in late.get("ranks", []) if r["named"]],
        "critical_path": ({k: cp[k] for k in ("step", "step_ns", "slowest_rank", "by_rank")}
                          if cp else ra.get("critical_path_note")),
    }


def _why(cause: dict[str, Any] | None) -> dict[str, Any] | None:
    """A late rank's cause: its kind, its two largest excess rows, its stalls."""
    if not cause:
        return None
    return {"kind": cause["kind"],
            "excess": [{"cause": x["label"], "ns": x["excess_ns"]} for x in cause["excess"][:2]],
            "stalls": [{"op": x["name"], "self_ns": x["self_ns"], "median_ns": x["median_ns"]}
                       for x in cause["stalls"][:2]]}


def _slim_steps(steps: dict[str, Any] | None, rows: int) -> dict[str, Any] | None:
    """The step summary with the first `rows` per-step rows (issue 15; detail=full: all)."""
    if steps is None:
        return None
    return {**steps, "per_step": steps["per_step"][:rows]}


def _slim_account(account: dict[str, Any] | None, rows: int) -> dict[str, Any] | None:
    """The steady-state account's largest `rows` rows: cause, ns, share, top frame."""
    if account is None:
        return None
    keep = ("steady_wall_ns", "steady_steps", "steady_fallback", "empty_queue_share",
            "launch_bound")
    return {**{k: account[k] for k in keep if k in account},
            "steady_state": [{"cause": r["cause"], "ns": r["ns"],
                              "share_of_step": round(r["share_of_step"], 4),
                              "top_frame": (r["top_frames"][0]["frame"]
                                            if r["top_frames"] else None)}
                             for r in account["steady_state"][:rows]],
            "rows_total": len(account["steady_state"])}


def shape_absent(doc: dict[str, Any], absent: dict[str, str]) -> dict[str, Any]:
    return with_absent(doc, absent)
