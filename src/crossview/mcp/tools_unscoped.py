"""Tools beyond one scope: diff of two captures, A/B of trials, LLM speed-of-light, SQL."""

from __future__ import annotations

import json
from typing import Annotated, Any

from pydantic import Field

from crossview.analysis import bench_arms
from crossview.errors import CrossviewError
from crossview.knowledge.thresholds import defaults
from crossview.mcp import relations
from crossview.mcp.cache import AnalysisCache, FilterArg
from crossview.mcp.compact import Detail, within
from crossview.mcp.jsonout import dumps
from crossview.mcp.safety import Refused, run_query
from crossview.store import stdlib

from .tools_views import Flt, Paths

# Hard caps of the query tool (not analysis thresholds: they bound the server's work)
MAX_ROWS = 10_000
MAX_SECONDS = 30.0
VIEW_NAMES = ", ".join(v.name for v in stdlib.catalog())
FILTERED_NAMES = ", ".join(str(v.filtered_name) for v in stdlib.filtered())


class OtherTools:
    def __init__(self, cache: AnalysisCache) -> None:
        self.cache = cache

    def diff(self, a: Annotated[str | list[str], Field(
                 description="Capture A (baseline): a Kineto/nsys file or folder, or several "
                 "paths read together.")],
             b: Annotated[str | list[str], Field(
                 description="Capture B, compared against A.")],
             lever: Annotated[list[str] | None, Field(
                 description="Check the replay's prediction: levers NAME[=PARAM] applied to A "
                 "(as whatif) beside B's measured median step, with the error and range.")]
             = None,
             fail_on_regression: Annotated[float | None, Field(
                 description="Judge a regression gate: PCT % on the metric (default the "
                 "median step), beyond the step-to-step noise.")] = None,
             metric: Annotated[str | None, Field(
                 description="The gate's metric: median step | kernel time per step | GPU "
                 "busy per step.")] = None,
             detail: Detail = "summary") -> str:
        """What changed from A to B, as `crossview diff`: comparability, the GPU's drift (one
        factor on the same kernels), step-to-step noise (unknown with < 2 steady steps),
        per-step causes, host ops matched by stack/name/shapes, kernel family and kernel
        deltas (ns); `lever` adds the prediction checked against B, `fail_on_regression` the
        gate's verdict and why. Per path, as the other tools: a path or file of a side that
        is refused is listed under `rejected` (per side) and the rest of that side compared.
        At summary the longest lists are shortened to fit the budget (said under `cut`)."""
        # lazy: MCP server start-up loads no tool's work (+~1 s measured, decision 0902)
        from crossview.experiments import lever_check, regression
        from crossview.experiments.diff import attach, compare

        sides = []
        for label, given in (("a", a), ("b", b)):
            paths = [given] if isinstance(given, str) else list(given)
            try:
                side = self.cache.get(paths, None)
            except Refused as e:  # nothing of this side could be read: no diff to make
                raise Refused(f"{label}: {e}") from None
            with side.lock:  # views are computed on first use, on the entry's connection
                kernels = bool(side.analysis.views and side.analysis.views.metrics.kernel_count)
            if not kernels:
                raise Refused(f"{label}: {', '.join(paths)}: no GPU kernels in this capture: "
                              "diff needs a Kineto or nsys timeline")
            sides.append(side)
        first, second = sorted(sides, key=id)  # one lock order: no deadlock with `diff B A`
        try:
            with first.lock, second.lock:
                d = compare(sides[0].analysis, sides[1].analysis)
                gate = (regression.judge(sides[0].analysis, sides[1].analysis,
                                         fail_on_regression, metric)
                        if fail_on_regression is not None else None)
            check = None
            if lever:
                check = lever_check.check(list(sides[0].paths), list(sides[1].paths),
                                          list(lever))
            attach(d, check, gate)
            body = d.to_dict()
        except CrossviewError as e:
            raise Refused(str(e)) from None
        rejected = {k: s.scope()["rejected"] for k, s in zip("ab", sides, strict=True)}
        if any(rejected.values()):
            body["rejected"] = rejected
        doc = {"units": "ns", **body}  # body names the sides (`a`, `b`)
        return dumps(doc) if detail == "full" else within(doc)

    def ab_compare(
        self,
        baseline: Annotated[list[str], Field(description="Baseline result files, one per "
                                             "trial.", min_length=1)],
        variant: Annotated[list[str], Field(description="Variant result files.",
                                            min_length=1)],
        metric: Annotated[list[str] | None, Field(description="Metrics to compare (default: "
                                                  "every metric with a known direction).")]
        = None,
        noise_pct: Annotated[float | None, Field(description="Noise threshold in %.")] = None,
        alpha: Annotated[float | None, Field(description="Test level (default 0.10).")] = None,
        allow_diff: list[str] | None = None,
        higher_is_better: list[str] | None = None,
        lower_is_better: list[str] | None = None,
        detail: Detail = "summary",
    ) -> str:
        """A/B of benchmark trials as `crossview ab`: medians, bootstrap CI, p, verdict
        (win / loss / null / insufficient) per metric, refusals when the arms differ in
        context. Read-only: no ledger is written from the server."""
        # lazy: MCP server start-up loads no tool's work (+~1 s measured, decision 0902)
        from crossview.experiments.ab import run_ab

        # lazy: MCP server start-up loads no tool's work (+~1 s measured, decision 0902)
        from crossview.render import ab as table

        base = self.cache.roots.check_all(baseline)
        var = self.cache.roots.check_all(variant)
        try:
            res = run_ab(base, var, metric, noise_pct, alpha, set(allow_diff or ()),
                         set(higher_is_better or ()), set(lower_is_better or ()))
        except CrossviewError as e:
            raise Refused(str(e)) from None
        n = defaults().ab_bootstrap_resamples
        doc = json.loads(json.dumps({"baseline": res.baseline.paths, "variant":
                                     res.variant.paths, **table.to_json(res, n)},
                                    default=str))
        return dumps(doc) if detail == "full" else within(doc)

    def sol_bounds(
        self,
        model: Annotated[str, Field(description="config.json path or shipped model name.")],
        hardware: Annotated[str, Field(description="GPU: sol_ceilings.yaml key or name.")],
        dtype: str = "bf16", kv_dtype: str = "bf16", tp: int | None = None,
        batch: int | None = None, isl: int | None = None, osl: int | None = None,
        bench: Annotated[str | None, Field(description="Benchmark result to rate (% of "
                                           "SoL).")] = None,
        detail: Detail = "summary",
    ) -> str:
        """LLM speed-of-light as `crossview sol`: lower bounds on prefill, TTFT, TPOT and
        tokens/s for a model on a GPU, and a benchmark's % of SoL when given."""
        # lazy: MCP server start-up loads no tool's work (+~1 s measured, decision 0902)
        from crossview.render import sol as out
        from crossview.sol import command

        if model.endswith(".json") or "/" in model or _not_shipped(model):
            model = str(self.cache.roots.check(model))  # a file: inside the roots only
        bench_path = self.cache.roots.check(bench) if bench else None
        try:
            arm = bench_arms(bench_path)[0] if bench_path else None
            answer = command.bound(model, hardware, dtype=dtype, kv_dtype=kv_dtype, tp=tp,
                                   batch=batch, isl=isl, osl=osl, arm=arm)
        except CrossviewError as e:
            raise Refused(str(e)) from None
        doc = json.loads(out.render_json(*answer))
        return dumps(doc) if detail == "full" else within(doc)

    def query(
        self,
        paths: Paths,
        sql: Annotated[str, Field(description="One read-only SELECT/WITH over the store. "
                                  "Named views (columns and units: resource "
                                  f"crossview://views): {VIEW_NAMES}; steps / step_idle are "
                                  "the analysis's steps and idle time per step, device and "
                                  "cause under the filter. Raw tables: artifacts, devices, "
                                  "gpu_ops, host_ops, frames, samples, metrics, trials…. "
                                  "The named views cover every artifact; their filtered "
                                  f"forms {FILTERED_NAMES} are the same views under the "
                                  "call's filter (as f_gpu / f_host are gpu_ops / host_ops)."
                                  " Times are integer ns. "
                                  "frame_key(name) gives a frame's identity across runs "
                                  "(addresses, step numbers… replaced), as diff matches.")],
        filter: Flt = None,
        max_rows: Annotated[int, Field(ge=1, description=f"Row limit (≤ {MAX_ROWS:,}).")]
        = 200,
        timeout_s: Annotated[float, Field(gt=0, description=f"Time limit (≤ {MAX_SECONDS:g} "
                                          "s).")] = 10.0,
        detail: Detail = "summary",
    ) -> str:
        """Read-only SQL (DuckDB) on the analysis store of `paths` + `filter`. One
        SELECT/WITH statement; anything that writes, attaches or reads files is refused.
        More rows than max_rows: the first max_rows come back with `truncated: true`. At
        summary, rows past the character budget are cut too (said under `cut`): aggregate
        in SQL, or detail=full for all max_rows."""
        if max_rows > MAX_ROWS:
            raise Refused(f"query: max_rows {max_rows:,} is over the server's cap of "
                          f"{MAX_ROWS:,}: aggregate in SQL instead")
        if timeout_s > MAX_SECONDS:
            raise Refused(f"query: timeout_s {timeout_s:g} is over the cap of {MAX_SECONDS:g}")
        e = self.cache.get(paths, filter)
        with e.lock:
            store = e.analysis.views.store  # type: ignore[union-attr]
            relations.prepare(store, e.analysis.views, sql)
            r = run_query(store.con, sql, max_rows, timeout_s, refuse_over_limit=False)
        body: dict[str, Any] = {"columns": r.columns, "rows": r.rows, "row_count": len(r.rows),
                                "truncated": r.truncated}
        doc = {**e.scope(), **body}
        return dumps(doc) if detail == "full" else within(doc)


__all__ = ["FilterArg", "OtherTools"]


def _not_shipped(model: str) -> bool:
    """A model name that is not a shipped config is a file name: resolved against the roots,
    never against the server's working directory (issue 18)."""
    # lazy: MCP server start-up loads no tool's work (+~1 s measured, decision 0902)
    from crossview.sources import model_config

    return model_config._by_name(model) is None
