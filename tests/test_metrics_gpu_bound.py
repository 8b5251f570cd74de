"""A metrics-only bundle whose load group is busy past the GPU-bound cut says which side limits
(the GPU: the host keeps it fed) and what would tell more, instead of "nothing to judge"
because its idle group was flagged. Numbers recomputed from the raw nvidia-smi capture: the
load section's query-gpu row and its five dmon rows (the six samples crossview reads)."""

from __future__ import annotations

from pathlib import Path

import pytest

from crossview.analysis import analyze
from crossview.render import markdown

CAP = Path(__file__).resolve().parents[2] / "shared/data/metrics/nvidia-smi_h100_capture.txt"
pytestmark = pytest.mark.skipif(not CAP.exists(), reason=f"{CAP} absent (../shared/data)")


def _load_samples() -> tuple[list[float], list[float], float]:
    """(utilization %, power W) per sample of the load section, and its power limit (W)."""
    lines = CAP.read_text().splitlines()
    q = next(n for n, x in enumerate(lines) if x.startswith("# load :: query-gpu"))
    row = dict(zip([h.strip() for h in lines[q + 3].split(",")],
                   [x.strip() for x in lines[q + 4].split(",")], strict=True))
    util = [float(row["utilization.gpu [%]"].split()[0])]
    power = [float(row["power.draw [W]"].split()[0])]
    dm = next(n for n, x in enumerate(lines) if x.startswith("# load :: dmon"))
    for x in lines[dm + 5: dm + 10]:  # gpu pwr gtemp mtemp sm mem … (after two header lines)
        f = x.split()
        power.append(float(f[1]))
        util.append(float(f[4]))
    return util, power, float(row["power.limit [W]"].split()[0])


def test_load_group_is_gpu_bound_and_the_key_finding_says_so() -> None:
    util, power, limit = _load_samples()
    assert len(util) == 6 and limit == 700.0
    a = analyze([CAP])
    assert a.views is not None
    regimes = {s.device.rsplit(" ", 1)[-1]: s.regime for s in a.views.workload_sol}
    assert regimes == {"[idle]": "idle", "[load]": "gpu-bound"}
    key = markdown.render(a).split("**Key findings**", 1)[1].split("\n\n", 1)[0]
    assert "Nothing to judge" not in key
    mean_u, mean_p = sum(util) / len(util), sum(power) / len(power)
    # three processes (gpu_burn and two memhog) share the GPU in this window: busy, but not
    # one workload's verdict (decision 0795; tests/test_gpu_processes.py)
    assert f"[load] is busy {mean_u:.1f}% of the time at {mean_p:.1f} W of its {limit:.0f} W" \
        " power limit" in key
    assert "3 processes hold memory on it in this window" in key
    assert "**GPU-bound**" not in key
