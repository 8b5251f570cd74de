"""Issue 40: every MCP tool's result within the documented cap (docs/mcp.md: a summary is at
most SUMMARY_BUDGET_CHARS characters) at every level, on every capture in ../shared/data.

The tools are called in process (the same functions the server registers); the table of
calls below must name every tool the server registers, so a new tool without a budget check
fails here. `detail="summary"` (the default) must fit the budget; `detail="full"` returns
everything (never cut). `fit`'s last level is shrunk until it fits (a SYNTHETIC oversized
document checks that path, which no shared capture reaches at every tool).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install '.[mcp]')")

from conftest import SHARED_DATA  # noqa: E402
from crossview.errors import CrossviewError  # noqa: E402
from crossview.mcp.cache import AnalysisCache  # noqa: E402
from crossview.mcp.compact import SUMMARY_BUDGET_CHARS, fit, shrink  # noqa: E402
from crossview.mcp.jsonout import dumps  # noqa: E402
from crossview.mcp.safety import Refused, Roots  # noqa: E402
from crossview.mcp.server import build  # noqa: E402
from crossview.mcp.tools_ops import OpTools  # noqa: E402
from crossview.mcp.tools_synthesis import SynthesisTools  # noqa: E402
from crossview.mcp.tools_unscoped import OtherTools  # noqa: E402
from crossview.mcp.tools_views import ViewTools  # noqa: E402
from crossview.mcp.tools_whatif import WhatIfTools  # noqa: E402

DATA = SHARED_DATA
pytestmark = pytest.mark.skipif(not DATA.exists(), reason="../shared/data absent")
OTHER = DATA / "kineto" / "kineto_v100_resnet50_workers4.pt.trace.json.gz"


def _captures() -> list[Path]:
    """Every capture set: each file, a folder of CSV exports or of one job's ranks as one
    (an .nsys-rep needs the nsys CLI, not installed here)."""
    if not DATA.exists():
        return []
    files = [p for p in DATA.rglob("*") if p.is_file() and p.suffix not in {".md", ".yaml"}
             and p.suffix != ".nsys-rep" and not p.name.endswith("_cmd.txt")]
    return sorted({p.parent if p.suffix == ".csv" or p.parent.name.startswith("megatron")
                   else p for p in files})


_CACHE: dict[Path, AnalysisCache] = {}


def _calls(root: Path, c: Path) -> dict[str, Callable[[str], str]]:
    """tool name → a call of it on capture `c` at one detail level (one analysis cache for
    the whole module: the diff's other side is read once). The bundle tools read a folder:
    they run on the captures that are folders (a file's folder would be the whole kineto/
    set, read again for each file)."""
    cache = _CACHE.setdefault(root, AnalysisCache(Roots([root])))
    v, ops, other = ViewTools(cache), OpTools(cache), OtherTools(cache)
    syn, what = SynthesisTools(cache), WhatIfTools(cache)
    p = [str(c)]
    bundle = str(c)

    def on_folder(call: Callable[[str], str]) -> Callable[[str], str]:
        return call if c.is_dir() else (lambda d: "")
    return {
        "topentities": lambda d: v.topentities(p),
        "gpu_metrics": lambda d: v.gpu_metrics(p, detail=d),
        "hot_traces": lambda d: v.hot_traces(p, "cpu" if d == "cpu" else "gpu", detail=d),
        "flamegraph": lambda d: v.flamegraph(p, detail=d),
        "topfunctions": lambda d: v.topfunctions(p, detail=d),
        "kernels": lambda d: v.kernels(p, detail=d),
        "analyze": lambda d: v.analyze(p, detail=d),
        "ab_compare": lambda d: "",  # trials, not captures: test_ab_compare_fits below
        "diff": lambda d: other.diff(str(c), str(OTHER), detail=d),
        "sol_bounds": lambda d: "",  # a model and a GPU, not a capture: test below
        "query": lambda d: other.query(p, "SELECT * FROM gpu_ops", max_rows=2000, detail=d),
        "op_roofline": lambda d: ops.op_roofline(p, detail=d),
        "transfers": lambda d: ops.transfers(p, detail=d),
        "inventory": on_folder(lambda d: syn.inventory(bundle, detail=d)),
        "synthesize": on_folder(lambda d: syn.synthesize(bundle, detail=d)),
        # the replay's document does not depend on the level: at summary only
        "whatif": lambda d: what.whatif(p) if d == "summary" else "",
    }


def test_the_table_names_every_registered_tool() -> None:
    tools = build([DATA])._tool_manager.list_tools()
    assert {t.name for t in tools} == set(_calls(DATA, DATA / "x"))
    # every tool takes detail (summary | full) but topentities, whose rows are `top`
    for t in tools:
        if t.name != "topentities":
            assert t.parameters["properties"]["detail"]["enum"] == ["summary", "full"], t.name


@pytest.mark.parametrize("capture", _captures(), ids=lambda p: str(p.relative_to(DATA)))
def test_every_tool_and_level_within_the_cap(capture: Path) -> None:
    calls = _calls(DATA, capture)
    sizes: dict[str, int] = {}
    for name, call in calls.items():
        for detail in ("summary", "cpu", "full"):  # "cpu": hot_traces' CPU view at summary
            if detail == "cpu" and name != "hot_traces":
                continue
            try:
                text = call(detail)
            except (Refused, CrossviewError):  # a tool that does not apply: one sentence
                continue
            if not text:
                continue
            doc = json.loads(text)
            if detail == "full":
                assert not str(doc.get("cut", "")).startswith("over"), (name, "full is whole")
            else:
                sizes[f"{name} {detail}"] = len(text)
    over = {k: n for k, n in sizes.items() if n > SUMMARY_BUDGET_CHARS}
    assert sizes and not over, over


def test_markdown_recap_fits_and_keeps_its_verdict() -> None:
    """The largest Markdown recap (HTA V100 DDP: 11.9 KB at the first screen) is cut at a
    line to fit; the key findings and the first 🔴 stay."""
    trace = DATA / "kineto" / "hta_v100_ddp_training.json.gz"
    v = ViewTools(AnalysisCache(Roots([DATA])))
    text = v.analyze([str(trace)], format="md")
    doc = json.loads(text)
    assert len(text) <= SUMMARY_BUDGET_CHARS
    assert "**Key findings**" in doc["markdown"] and "### 1. " in doc["markdown"]
    full = json.loads(v.analyze([str(trace)], format="md", detail="full"))["markdown"]
    assert "**GPU metrics**" in full and len(full) > SUMMARY_BUDGET_CHARS


def test_ab_compare_and_sol_bounds_fit(tmp_path: Path) -> None:
    from test_cli_lists import _trials

    other = OtherTools(AnalysisCache(Roots([tmp_path, DATA])))
    b = [str(x) for x in _trials(tmp_path, "b", [100.0, 101.0, 102.0])]
    v = [str(x) for x in _trials(tmp_path, "v", [120.0, 121.0, 122.0])]
    for detail in ("summary", "full"):
        text = other.ab_compare(b, v, detail=detail)
        assert len(text) <= SUMMARY_BUDGET_CHARS and json.loads(text)["baseline"] == b
        text = other.sol_bounds("Llama-3.1-8B", "h100", detail=detail)
        assert len(text) <= SUMMARY_BUDGET_CHARS and json.loads(text)


def test_fit_shrinks_its_last_level_to_the_budget() -> None:
    """SYNTHETIC: a document of 1,000 rows and a 15,000-character text, over the budget at
    its only level: the rows are halved and the text cut at a line until it fits; the scope
    echo is kept; `cut` says what was cut."""
    doc: dict[str, Any] = {"paths": ["a.json"], "filter": {}, "resolved": {"artifacts": ["a"]},
                           "rows": [{"name": "k" * 40, "ns": i} for i in range(1000)],
                           "markdown": "".join(f"line {i}\n" for i in range(1500))}
    text = fit([lambda: doc])
    out = json.loads(text)
    assert len(text) <= SUMMARY_BUDGET_CHARS
    assert out["paths"] == ["a.json"] and out["resolved"] == {"artifacts": ["a"]}
    assert 1 <= len(out["rows"]) < 1000 and out["markdown"].startswith("line 0\nline 1\n")
    assert "rows:" in out["cut"] and "detail=full" in out["cut"]
    assert len(dumps(shrink(doc))) <= SUMMARY_BUDGET_CHARS
