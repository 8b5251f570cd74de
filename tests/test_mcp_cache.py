"""The MCP server's cache of opened captures: by content (sha256), re-read only on change.

In process (the tools' own classes, no server subprocess). Numbers: the MI300X vLLM decode
trace has 425 kernels summing to 10,674,517 ns and the H100 HF Qwen forward trace 1,465
kernels (both counted with gzip+json over events of cat "kernel", as in test_mcp.py and the
data README). `reads` counts parses, `hashes.hashed` counts sha256 passes over a file.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install '.[mcp]')")

from conftest import SHARED_DATA
from crossview.lake.fanout import Engine  # noqa: E402
from crossview.lake.ingest import ingest  # noqa: E402
from crossview.mcp.cache import AnalysisCache, FilterArg  # noqa: E402
from crossview.mcp.safety import Refused, Roots  # noqa: E402
from crossview.mcp.tools_unscoped import OtherTools  # noqa: E402
from crossview.mcp.tools_views import ViewTools  # noqa: E402

KINETO = SHARED_DATA / "kineto"
MI300X = KINETO / "tracelens_mi300x_vllm_decode_full_graph.json.gz"
H100 = KINETO / "tracelens_h100_hf_qwen1.5_0.5b_forward.json.gz"
pytestmark = pytest.mark.skipif(not (MI300X.exists() and H100.exists()),
                                reason="../shared/data absent")
KERNELS = "SELECT count(*), sum(dur_ns) FROM f_gpu WHERE kind = 'kernel'"


@pytest.fixture()
def root(tmp_path: Path) -> Path:
    shutil.copyfile(MI300X, tmp_path / "trace.json.gz")
    return tmp_path


def _tools(root: Path, size: int = 8) -> tuple[AnalysisCache, ViewTools, OtherTools]:
    cache = AnalysisCache(Roots([root]), size)
    return cache, ViewTools(cache), OtherTools(cache)


def _q(tools: OtherTools, paths: list[str], flt: FilterArg | None = None) -> dict:
    return json.loads(tools.query(paths, KERNELS, flt))


def test_read_once_then_cached_across_tools_and_filters(root: Path) -> None:
    cache, views, other = _tools(root)
    p = [str(root / "trace.json.gz")]
    first = json.loads(views.hot_traces(p, "gpu"))
    assert first["store"]["state"] == "read" and first["store"]["files"] == 1
    assert first["tree"]["total_ns"] == 10_674_517
    again = json.loads(views.hot_traces(p, "cpu"))
    assert again["store"] == {**first["store"], "state": "cached"}
    # another filter: a new connection on the same store, not a second parse
    dev = _q(other, p, FilterArg(device=2))
    assert dev["store"]["state"] == "cached" and dev["rows"] == [[425, 10_674_517]]
    top = json.loads(views.topentities(p))
    assert top["devices"][0]["gpu_kernel_ns"] == 10_674_517
    assert json.loads(views.topentities(p)) == top  # memoized on the entry: same answer
    entry = cache.get(p, None)
    assert entry.memo[("topentities", 20)]["devices"] == top["devices"]
    assert cache.reads == 1 and cache.hashes.hashed == 1
    # the first filter's view is untouched by the second's f_gpu
    assert _q(other, p)["rows"] == [[425, 10_674_517]]


def test_touched_file_is_hashed_not_reread(root: Path) -> None:
    cache, _, other = _tools(root)
    f = root / "trace.json.gz"
    _q(other, [str(f)])
    st = f.stat()
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    r = _q(other, [str(f)])
    assert r["store"]["state"] == "cached" and r["rows"] == [[425, 10_674_517]]
    assert cache.hashes.hashed == 2 and cache.reads == 1


def test_changed_file_is_reread_and_says_why(root: Path) -> None:
    cache, _, other = _tools(root)
    f = root / "trace.json.gz"
    before = _q(other, [str(f)])
    shutil.copyfile(H100, f)
    after = _q(other, [str(f)])
    assert after["store"]["state"] == "re-read" and cache.reads == 2
    assert str(f) in after["store"]["why"] and "changed (sha256" in after["store"]["why"]
    assert after["store"]["content_sha256"] != before["store"]["content_sha256"]
    assert after["rows"][0][0] == 1465
    assert _q(other, [str(f)])["store"]["state"] == "cached"


def test_lru_closes_and_rereads(root: Path) -> None:
    shutil.copyfile(H100, root / "h100.json.gz")
    cache, _, other = _tools(root, size=1)
    a, b = [str(root / "trace.json.gz")], [str(root / "h100.json.gz")]
    assert _q(other, a)["rows"][0][0] == 425
    assert _q(other, b)["rows"][0][0] == 1465
    r = _q(other, a)
    assert r["store"]["state"] == "read" and r["rows"][0][0] == 425 and cache.reads == 3


def test_lake_is_opened_once_without_a_parse(root: Path, tmp_path_factory: pytest.TempPathFactory
                                             ) -> None:
    lake = root / "lake"
    ingest([root / "trace.json.gz"], lake, engine=Engine(0))
    (root / "trace.json.gz").unlink()  # the lake alone answers
    cache, views, other = _tools(root)
    first = _q(other, [str(lake)])
    assert first["store"]["state"] == "read" and first["rows"] == [[425, 10_674_517]]
    assert json.loads(views.hot_traces([str(lake)]))["tree"]["total_ns"] == 10_674_517
    assert _q(other, [str(lake)])["store"]["state"] == "cached" and cache.reads == 1
    other_file = tmp_path_factory.mktemp("x")
    # a path outside the roots beside the lake is refused on its own (issue 18: nothing else
    # lost); the lake still answers
    r = _q(other, [str(lake), str(other_file)])
    assert r["rows"] == [[425, 10_674_517]]
    assert [x["path"] for x in r["rejected"]] == [str(other_file)]
    assert "outside the allowed roots" in r["rejected"][0]["problems"][0]
    shutil.copyfile(H100, root / "h100.json.gz")
    with pytest.raises(Refused, match="a perf-lake is one input"):
        _q(other, [str(lake), str(root / "h100.json.gz")])


def test_fifo_is_not_hashed(tmp_path: Path) -> None:
    """A FIFO named like a capture: hashing it would block the server; it is never read."""
    from crossview.mcp.fingerprint import Hashes

    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    h = Hashes()
    assert h.content([fifo])[str(fifo)].startswith("not-a-regular-file:p")
    assert h.hashed == 0
