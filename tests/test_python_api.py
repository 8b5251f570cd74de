"""The Python API re-exported from `crossview` (issue 14): typed functions over the same code
as the CLI, and JSON outputs carrying `schema_version`. Numbers checked by hand
on the MI300X vLLM decode graph (../shared/data): 425 `cat: kernel` events, all on device 2,
whose interval union covers 99.76 % of their span (gzip + json + a sorted sweep; the data
README's 421 are the ones one hipGraphLaunch replays)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import crossview
from conftest import SHARED_DATA, cli_env, run_cli
from test_cli_lists import _trials
from test_synthesis import needs_data, rtx_bundle

DATA = SHARED_DATA
MI300 = DATA / "kineto" / "tracelens_mi300x_vllm_decode_full_graph.json.gz"
needs_mi300 = pytest.mark.skipif(not MI300.exists(), reason="../shared/data absent")


def test_the_api_is_exported_typed_and_lazy() -> None:
    for name in ("analyze", "synthesize", "diff", "ab", "to_json", "Filter", "Analysis"):
        assert name in crossview.__all__ and getattr(crossview, name) is not None
    assert crossview.analyze.__annotations__["filter"] == "Filter | None"
    assert (Path(crossview.__file__).parent / "py.typed").is_file()
    # `import crossview` stays cheap: the capture hook imports it in every process
    code = "import sys, crossview; print('duckdb' in sys.modules, 'torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env=cli_env()).stdout.split()
    assert out == ["False", "False"]


@needs_mi300
def test_readme_example_analyze_with_filter_matches_the_cli_json() -> None:
    result = crossview.analyze([MI300], filter=crossview.Filter(device=2))
    assert result.views is not None and not result.rejected
    m = result.views.metrics
    assert m.kernel_count == 425 and round(m.kernel_busy_pct, 1) == 99.8
    doc = crossview.to_json(result)
    assert doc["schema_version"] == crossview.SCHEMA_VERSION == 1
    assert doc["filter"]["requested"]["device"] == 2
    cli = run_cli("analyze", MI300, "--device", "2", "--format", "json", check=True)
    assert json.loads(cli.stdout) == json.loads(json.dumps(doc))
    d = crossview.diff(result, MI300)  # an Analysis or a path on either side
    assert crossview.to_json(d)["schema_version"] == 1


def test_ab_from_python(tmp_path: Path) -> None:
    b = _trials(tmp_path, "baseline", [100.0, 101.0, 102.0])
    v = _trials(tmp_path, "variant", [120.0, 121.0, 122.0])
    res = crossview.ab(b, v, ["output_throughput"])
    [m] = res.metrics
    assert m.verdict == "win" and (m.n_base, m.n_var) == (3, 3)
    doc = crossview.to_json(res)
    assert doc["schema_version"] == 1 and doc["metrics"][0]["baseline"]["median"] == 101.0


@needs_data
def test_synthesize_from_python_writes_nothing(tmp_path: Path) -> None:
    b = rtx_bundle(tmp_path)
    syn = crossview.synthesize(b)
    assert syn.levers and not (b / "findings").exists()
    assert crossview.to_json(syn)["schema_version"] == 1
