"""The recap's key finding when kernel time itself is what is left: it names the largest kernel
family and the top kernel (shares recomputed here from the raw JSON with tests/oracle.py), and
the per-kernel counter tool of the GPU's vendor — ROCm Compute Profiler on the MI300X capture,
never `ncu` (an NVIDIA-only tool) for an AMD GPU. Skips without ../shared/data."""

from __future__ import annotations

from collections import Counter

import pytest

import oracle
from conftest import SHARED_DATA, SHARED_DATA_ABSENT
from crossview.analysis import analyze
from crossview.render import markdown

KINETO = SHARED_DATA / "kineto"


def _key_line(path) -> str:  # type: ignore[no-untyped-def]
    text = markdown.render(analyze([path]))
    (line,) = [ln for ln in text.splitlines() if ln.startswith("**Key findings**")]
    return line


def _top_kernel_share(path) -> tuple[str, float]:  # type: ignore[no-untyped-def]
    ks = oracle.kernels(oracle.load_trace(path))
    by = Counter[str]()
    for k in ks:
        by[k.name] += k.dur_ns
    name, ns = by.most_common(1)[0]
    return name, 100 * ns / oracle.kernel_time_ns(ks)


@pytest.mark.parametrize("trace,tool,not_tool", [
    ("tracelens_mi300x_vllm_decode_full_graph", "rocprof-compute profile", "ncu"),
])
def test_kernel_time_left_names_top_kernel_and_the_vendor_tool(trace: str, tool: str,
                                                               not_tool: str) -> None:
    path = KINETO / f"{trace}.json.gz"
    if not path.exists():
        pytest.skip(SHARED_DATA_ABSENT)
    line = _key_line(path)
    name, share = _top_kernel_share(path)
    assert f"the top kernel `{name[:59]}" in line and f"{share:.1f}%;" in line
    assert tool in line and not_tool not in line


def test_nvidia_and_unknown_gpus_get_nsight_compute() -> None:
    from crossview.knowledge.fixes import fix_for

    assert "ncu --set full" in fix_for("kernel-time-left", {"vendor": None})
    assert "rocprof" not in fix_for("kernel-time-left", {"vendor": "nvidia"})
