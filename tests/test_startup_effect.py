"""The gpu-idle expected effect leaves start-up out: on the nvFuser H200 nsys capture most
host-wait idle is a one-off (NVRTC compilation, module loading, first cudaMalloc), and the
start-up frames' time must not be promised back as a recoverable lever (conventions §1)."""

from __future__ import annotations

from pathlib import Path

import pytest

from crossview.analysis import analyze
from crossview.units import duration

NSYS = (Path(__file__).resolve().parents[2] / "shared" / "data" / "nsys"
        / "nvfuser_h200_nsys2025.1.sqlite")


@pytest.mark.skipif(not NSYS.exists(), reason=f"{NSYS} absent (../shared/data)")
def test_recoverable_host_wait_excludes_startup() -> None:
    a = analyze([NSYS])
    assert a.views is not None
    (f,) = [f for f in a.findings if f.pattern == "gpu-idle"]
    host_wait = a.views.metrics.idle.host_wait_ns
    startup = f.details["startup_ns"]
    assert startup == a.views.startup_ns[0] > 0
    left = host_wait - startup
    assert 0 < left < host_wait
    assert f.expected_effect.startswith(f"Up to {duration(left)} of host-wait idle")
    assert f"({duration(host_wait)} host wait less {duration(startup)} in start-up" in (
        f.expected_effect)
