"""MCP degrades, never dies (issue 43, item 6; decision 0891): the real `crossview mcp` stdio
server in a child process under a 4 GiB address-space cap (RLIMIT_AS), no --memory-limit.

Before: two DuckDB out-of-memory queries left no room to start a thread; then twelve calls
sent at once killed the server (the SDK's stdio writer could not start its thread: an
ExceptionGroup, exit). Now: each out-of-memory query is that call's error, and all twelve
calls — analyze and hot_traces on twelve copies of the MI300X capture, twelve stores — are
answered, each with the capture's 425 kernels (counted by hand: test_mcp.py).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import SHARED_DATA, shared_file

pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install '.[mcp]')")

from hostile.mcp_wire import Wire  # noqa: E402

TRACE = SHARED_DATA / "kineto" / "tracelens_mi300x_vllm_decode_full_graph.json.gz"
CAP = 4 << 30
# each past a 512 MiB store limit (4 GiB × 0.5 ÷ 4 calls) within seconds
OOM = ["SELECT list(repeat('y', 10000)) FROM range(10000000)",
       "SELECT string_agg(repeat('x', 100000), ',') FROM range(100000)"]


def test_twelve_calls_at_once_under_a_4_gib_cap_all_answered(tmp_path: Path) -> None:
    trace = shared_file(TRACE)
    root = tmp_path / "root"
    for i in range(12):
        (root / f"c{i}").mkdir(parents=True)
        shutil.copyfile(trace, root / f"c{i}" / trace.name)
    log = tmp_path / "server-stderr.txt"
    with log.open("wb") as err:
        # the user's own settings would hide the server's defaults: none given here
        w = Wire([root], stderr=err, as_cap=CAP,
                 env={"CROSSVIEW_MEMORY_LIMIT": "", "CROSSVIEW_THREADS": "",
                      "CROSSVIEW_ASYNC_THREADS": ""})
        try:
            for sql in OOM:
                _, is_error, text = w.tool("query", {"paths": [str(root / "c0")], "sql": sql,
                                                     "timeout_s": 20}, timeout=120)
                assert is_error is True, text
                assert "Out of Memory" in text, text
                assert w.alive()
            calls = [("analyze" if i % 2 else "hot_traces", {"paths": [str(root / f"c{i}")]})
                     for i in range(12)]
            answers = w.tools_at_once(calls, timeout=600)
            assert w.alive(), log.read_text(errors="replace")[-2000:]
            for (tool, _), (is_error, text) in zip(calls, answers, strict=True):
                assert is_error is False, (tool, text[:300])
                doc = json.loads(text)
                if tool == "analyze":
                    assert doc["metrics"]["kernel_count"] == 425
                else:
                    assert doc["tree"], doc
            _, is_error, text = w.tool("sol_bounds", {"model": "Llama-3.1-8B",
                                                      "hardware": "H100"}, timeout=120)
            assert is_error is False, text  # still serving
        finally:
            w.close()
    assert "ExceptionGroup" not in log.read_text(errors="replace")


def test_budget_under_a_cap_and_without(monkeypatch) -> None:
    """The numbers pressure.py chooses: 4 GiB × 0.5 ÷ 4 calls = 512 MiB per store; no cap,
    no limit (DuckDB's own); what the user set stays."""
    from crossview.mcp import pressure

    assert pressure.store_memory_limit(CAP) == "512MiB"
    assert pressure.store_memory_limit(None) is None
    for k in ("CROSSVIEW_THREADS", "CROSSVIEW_ASYNC_THREADS", "CROSSVIEW_MEMORY_LIMIT"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("CROSSVIEW_MEMORY_LIMIT", "300MB")
    monkeypatch.setattr(pressure, "address_space_cap", lambda: CAP)
    monkeypatch.setattr(pressure, "bound_malloc_arenas", lambda n: True)  # not this process
    chosen = pressure.apply()
    assert "CROSSVIEW_MEMORY_LIMIT" not in chosen  # the user's 300MB wins
    assert chosen["CROSSVIEW_ASYNC_THREADS"] == "1"
    assert 1 <= int(chosen["CROSSVIEW_THREADS"]) <= 4
