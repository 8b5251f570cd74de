"""The hostile runner's MCP mode on a fast subset (issue 18): one real stdio server, the
escape probes (a symlink out of the root in a walked folder, a bundle.yaml naming an outside
file, outside model configs, absolute and `..` paths), twelve calls at once and per-path
`whatif`/`diff` (issue 43), and a few corpus cases of different
readers through analyze, inventory, kernels, query and hot_traces. Every count must be 0:
no internal error, MemoryError, hang, escape, over-long answer, silent success or lost good
capture. The whole corpus: `python -m tests.hostile.run --mcp`.
"""

from __future__ import annotations

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install '.[mcp]')")

from hostile import mcp_run  # noqa: E402
from hostile.corpus import CASES, GOOD_KINETO  # noqa: E402

FAST = ("k_deep_args", "k_hugeint_devprops", "nsys_start_text", "fifo", "bad_name",
        "tar_symlink", "nonutf8_name_ok", "yaml_bomb",
        "k_stream_overlap")  # a doubt said only in the JSON: silent before (issue 43)


@pytest.mark.skipif(not GOOD_KINETO.is_file(), reason="../shared/data absent")
def test_fast_subset_through_the_mcp_tools() -> None:
    cases = [c for c in CASES if c.name in FAST]
    assert len(cases) == len(FAST)
    lines: list[str] = []
    found, calls = mcp_run.run(cases, list(mcp_run.TOOLS), timeout=120, echo=lines.append)
    assert sum(found.values()) == 0, "\n".join(lines)
    # escape probes, 12 calls at once + whatif + diff per path, cases (yaml_bomb: inventory)
    assert calls == 10 + 14 + 8 * len(mcp_run.TOOLS) + 1
