"""MCP results sized for an agent (issue 14), on the real captures of ../shared/data.

- The seed protocol (gpu_metrics → hot_traces gpu → hot_traces cpu with the echoed scope →
  analyze) through the stdio server and the official SDK client, on every Kineto capture:
  each result ≤ SUMMARY_BUDGET_CHARS at the default detail, kernels in the GPU tree, busy %
  equal to an independent count, and no traceback on the server's stderr for bad calls.
- Every view tool at `detail=summary` on every capture in ../shared/data stays within the
  budget (called in process: the same functions the server registers).
- Metrics-only input: the timeline metrics are null with a reason, never 0.
- `--root` reached through a symlink: paths are echoed as the caller spelled them.
Busy % is checked against a sweep over the `cat: kernel` events of the trace (gzip + json:
union of [ts, ts + dur] per device over the kernel span), independent of crossview.
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install '.[mcp]')")

from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402

from conftest import SHARED_DATA, cli_env
from crossview.mcp.cache import AnalysisCache  # noqa: E402
from crossview.mcp.compact import SUMMARY_BUDGET_CHARS  # noqa: E402
from crossview.mcp.safety import Roots  # noqa: E402
from crossview.mcp.tools_views import ViewTools  # noqa: E402

DATA = SHARED_DATA
KINETO = sorted((DATA / "kineto").glob("*.json.gz")) if DATA.exists() else []
pytestmark = pytest.mark.skipif(not KINETO, reason="../shared/data absent")


def _kernel_busy_pct(trace: Path) -> float:
    """Busy % of the kernel span, straight from the JSON (one device per capture here)."""
    with gzip.open(trace) as f:
        ev = [e for e in json.load(f)["traceEvents"]
              if str(e.get("cat", "")).lower() == "kernel" and e.get("ph") == "X"]
    iv = sorted((float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in ev)
    busy, (cs, ce) = 0.0, iv[0]
    for a, b in iv[1:]:
        if a > ce:
            busy, cs, ce = busy + ce - cs, a, b
        else:
            ce = max(ce, b)
    busy += ce - cs
    return 100 * busy / (max(b for _, b in iv) - iv[0][0])


def _kinds(node: Any) -> set[str]:
    out: set[str] = set()
    if isinstance(node, dict):
        out.add(node.get("kind", ""))
        for k in ("roots", "children"):
            for c in node.get(k, []):
                out |= _kinds(c)
    return out


def _server(root: Path, errlog: Path) -> StdioServerParameters:
    """The server on these sources; its stderr into `errlog` (the SDK client hands the
    child a default environment, so PYTHONPATH is passed explicitly)."""
    cmd = f'exec "{sys.executable}" -m crossview mcp --root "{root}" 2>"{errlog}"'
    return StdioServerParameters(command="bash", args=["-c", cmd], env=cli_env())


async def _call(c: Client, name: str, args: dict[str, Any]) -> tuple[bool, str]:
    r = await c.call_tool(name, args)
    return bool(r.is_error), r.content[0].text


def test_seed_protocol_on_every_kineto_capture(tmp_path: Path) -> None:
    errlog = tmp_path / "stderr.txt"
    sizes: dict[str, list[int]] = {}

    async def main() -> None:
        async with Client(_server(DATA, errlog)) as c:
            for trace in KINETO:
                err, text = await _call(c, "gpu_metrics", {"paths": [str(trace)]})
                assert not err, text
                gm = json.loads(text)
                # independent busy %: a kernel-count-only trace never reads as 0
                want = _kernel_busy_pct(trace)
                assert gm["metrics"]["kernel_busy_pct"] == pytest.approx(want, abs=0.05)
                assert gm["filter"] == {} and "requested" not in gm["resolved"]
                err, g = await _call(c, "hot_traces", {"paths": gm["paths"], "view": "gpu",
                                                       "filter": gm["filter"]})
                assert not err, g
                gpu = json.loads(g)
                assert "kernel" in _kinds(gpu["tree"]), (trace.name, g[:500])
                err, cpu_text = await _call(c, "hot_traces", {
                    "paths": gpu["paths"], "view": "cpu", "filter": gpu["filter"]})
                assert not err, cpu_text
                cpu = json.loads(cpu_text)
                assert cpu["filter"] == gpu["filter"] and cpu["resolved"] == gpu["resolved"]
                err, a = await _call(c, "analyze", {"paths": gm["paths"]})
                assert not err, a
                assert "markdown" not in json.loads(a)  # only with format: "md"
                sizes[trace.name] = [len(text), len(g), len(cpu_text), len(a)]

            # bad calls: one sentence each, as an error result; nothing on stderr
            err, text = await _call(c, "hot_traces", {})
            assert err and text == ("hot_traces: invalid arguments — missing required "
                                    "argument `paths`.")
            err, text = await _call(c, "hot_traces", {"paths": [str(KINETO[0])],
                                                      "view": "disk"})
            assert err and "\n" not in text and text.startswith("hot_traces: invalid")
            with pytest.raises(Exception, match="missing required argument `paths`"):
                await c.get_prompt("cross_view", {})
            prompt = await c.get_prompt("cross_view", {"paths": str(KINETO[0])})
            assert "gpu_metrics" in str(prompt)

    anyio.run(main)
    over = {k: v for k, v in sizes.items() if max(v) > SUMMARY_BUDGET_CHARS}
    assert len(sizes) == len(KINETO) and not over, over
    assert "Traceback" not in errlog.read_text()


def _all_captures() -> list[Path]:
    files = [p for p in DATA.rglob("*") if p.is_file() and p.name != "README.md"
             and p.suffix not in {".yaml", ".txt"} or p.name.startswith("nvidia-smi")]
    # a folder of nsys/ncu CSV exports is read as one capture set
    return sorted({p.parent if p.suffix == ".csv" else p for p in files})


@pytest.mark.parametrize("capture", _all_captures(), ids=lambda p: str(p.relative_to(DATA)))
def test_every_view_tool_fits_the_budget_at_summary(capture: Path) -> None:
    if capture.suffix == ".nsys-rep":
        pytest.skip("an .nsys-rep is read through `nsys export` (not installed here)")
    v = ViewTools(AnalysisCache(Roots([DATA])))
    p = [str(capture)]
    results = {"gpu_metrics": v.gpu_metrics(p), "hot_traces gpu": v.hot_traces(p, "gpu"),
               "hot_traces cpu": v.hot_traces(p, "cpu"), "analyze": v.analyze(p),
               "topfunctions": v.topfunctions(p), "flamegraph": v.flamegraph(p),
               "topentities": v.topentities(p)}
    if "ncu" in capture.parts:
        results["kernels"] = v.kernels(p)
    sizes = {k: len(t) for k, t in results.items()}
    assert max(sizes.values()) <= SUMMARY_BUDGET_CHARS, sizes
    doc = json.loads(results["gpu_metrics"])
    if "metrics" in doc.get("absent", {}):
        assert doc["metrics"] is None  # null with a reason, never busy 0.0
    else:
        assert doc["metrics"]["kernel_count"] > 0


def test_metrics_only_input_says_no_timeline_instead_of_zero() -> None:
    v = ViewTools(AnalysisCache(Roots([DATA])))
    doc = json.loads(v.gpu_metrics([str(DATA / "metrics" / "dcgm-exporter_t4.prom")]))
    assert doc["metrics"] is None and "no GPU timeline" in doc["absent"]["metrics"]
    assert "kernel_busy_pct" not in json.dumps(doc)
    # the counters it does hold: dcgm-exporter's GPU_UTIL of the T4 (0 % in the scrape)
    dev = doc["gpu_metrics"]["devices"][0]
    assert dev["name"] == "Tesla T4" and dev["stats"]["gpu_util"]["mean"] == 0.0
    full = json.loads(v.analyze([str(DATA / "metrics" / "dcgm-exporter_t4.prom")],
                                detail="full"))
    assert full["metrics"] is None and full["absent"]["metrics"]


def test_b200_gpu_tree_reaches_kernels_at_the_default_depth() -> None:
    """Issue 14: a deep vLLM python stack showed zero kernels at max_depth 16."""
    v = ViewTools(AnalysisCache(Roots([DATA])))
    trace = DATA / "kineto" / "tracelens_b200_vllm_eager_prefill_tp8.json.gz"
    for detail in ("summary", "full"):
        doc = json.loads(v.hot_traces([str(trace)], "gpu", detail=detail))
        assert "kernel" in _kinds(doc["tree"]), detail
    flame = json.loads(v.flamegraph([str(trace)]))
    assert flame["shown"] >= 1 and "→ " in flame["folded"]


def test_root_through_a_symlink_echoes_the_link(tmp_path: Path) -> None:
    link = tmp_path / "captures"
    link.symlink_to(DATA, target_is_directory=True)
    trace = link / "kineto" / "tracelens_mi300x_vllm_decode_full_graph.json.gz"
    v = ViewTools(AnalysisCache(Roots([link])))
    doc = json.loads(v.analyze([str(trace)], detail="full"))
    assert doc["paths"] == [str(trace)]
    assert [a["path"] for a in doc["artifacts"]] == [str(trace)]
    rel = json.loads(v.gpu_metrics(["kineto/" + trace.name]))
    assert rel["paths"] == ["kineto/" + trace.name]
