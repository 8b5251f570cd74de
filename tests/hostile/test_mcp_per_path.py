"""MCP `diff` and `whatif` answer per path like the other tools (issue 43, item 6): a path
refused (missing, a link out of the roots) or a file rejected (not a trace) is listed under
`rejected` and the rest is compared or replayed; only a side (diff) or a call (whatif) with
nothing readable is refused, naming each path. Before, one bad path refused the whole call.

Real captures: the V100 ResNet-50 workers=0 trace (whatif's measured median step 152.54 ms,
test_whatif_mcp.py) and the MI300X decode capture (425 kernels, 10,674,517 ns of kernel time,
test_mcp.py). The bad files are synthetic.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import anyio
import pytest

from conftest import SHARED_DATA, run_cli, shared_file

pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install '.[mcp]')")

from mcp import Client  # noqa: E402

from crossview.mcp.server import build  # noqa: E402

W0 = SHARED_DATA / "kineto" / "kineto_v100_resnet50_workers0.pt.trace.json.gz"
MI300 = SHARED_DATA / "kineto" / "tracelens_mi300x_vllm_decode_full_graph.json.gz"


def _root(tmp: Path) -> tuple[Path, dict[str, Path]]:
    root = tmp / "root"
    root.mkdir()
    outside = tmp / "outside.pt.trace.json"
    outside.write_text('{"traceEvents": []}')
    p = {"w0": root / W0.name, "mi300": root / MI300.name, "gone": root / "gone.json",
         "link": root / "link.pt.trace.json", "bad": root / "bad.json"}
    shutil.copyfile(shared_file(W0), p["w0"])
    shutil.copyfile(shared_file(MI300), p["mi300"])
    p["link"].symlink_to(outside)
    p["bad"].write_text("{}")  # JSON, but no trace
    return root, p


def _calls(server: object, calls: list[tuple[str, dict]]) -> list[tuple[bool, str]]:
    async def go() -> list[tuple[bool, str]]:
        out = []
        async with Client(server) as c:  # type: ignore[arg-type]
            for name, args in calls:
                r = await c.call_tool(name, args)
                out.append((bool(r.is_error), r.content[0].text))
        return out
    return anyio.run(go)


def test_whatif_and_diff_answer_per_path(tmp_path: Path) -> None:
    root, p = _root(tmp_path)
    bad = [str(p["gone"]), str(p["link"]), str(p["bad"])]
    (ok_w, w), (err_w, w_all), (ok_d, d), (err_d, d_side) = _calls(build([root]), [
        ("whatif", {"capture": [str(p["w0"]), *bad], "lever": ["dataloader-workers"]}),
        ("whatif", {"capture": bad}),
        ("diff", {"a": [str(p["mi300"]), str(p["gone"]), str(p["bad"])],
                  "b": str(p["mi300"])}),
        ("diff", {"a": str(p["mi300"]), "b": [str(p["gone"]), str(p["link"])]}),
    ])
    assert not ok_w, w
    doc = json.loads(w)
    assert doc["median"]["measured_step_ns"] == 152_536_500  # the capture still replayed
    why = {Path(r["path"]).name: r["problems"][0] for r in doc["rejected"]}
    assert why["gone.json"] == "no such file or folder"
    assert why["link.pt.trace.json"].startswith("outside the allowed roots")
    assert "bad.json" in why and why["bad.json"]  # read, not a trace: its reader's reason
    assert err_w and all(n in w_all for n in ("gone.json", "link.pt.trace.json"))

    assert not ok_d, d
    doc = json.loads(d)
    assert doc["net_change_ns"] == 0  # the same 425-kernel capture on both sides
    assert sorted(Path(r["path"]).name for r in doc["rejected"]["a"]) == [
        "bad.json", "gone.json"]
    assert doc["rejected"]["b"] == []
    # a side with nothing readable: no diff to make, said per path, naming the side
    assert err_d and f"b: {p['gone']}: no such file" in d_side \
        and "link.pt.trace.json" in d_side


def test_cli_whatif_replays_beside_a_bad_file(tmp_path: Path) -> None:
    _, p = _root(tmp_path)
    r = run_cli("--quiet", "whatif", p["w0"], p["bad"], "--format", "json")
    assert r.returncode == 2  # a rejected input: exit 2 after the output, as analyze
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"crossview: error: {p['bad']}: ")
    doc = json.loads(r.stdout)
    assert doc["median"]["measured_step_ns"] == 152_536_500
    assert [x["path"] for x in doc["rejected"]] == [str(p["bad"])]
