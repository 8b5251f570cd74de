"""Start-up is never promised back as a steady-state lever: on the nvFuser H200 nsys capture
most host-wait idle is a one-off (NVRTC compilation, module loading, first cudaMalloc), and
the start-up frames' time must not be promised back as a recoverable lever (conventions §1).

Issue 15: with the time account this capture is one unit that is mostly start-up, so the
capture-window finding is the 🔴 (with how to capture the steady state) and gpu-idle is a
summary note that promises nothing; without an account (`_host_wait_effect`) the recoverable
host wait still leaves start-up out."""

from __future__ import annotations

import pytest

from conftest import SHARED_DATA
from crossview.analysis import analyze
from crossview.detectors.gpu_idle import _host_wait_effect
from crossview.units import duration

NSYS = (SHARED_DATA / "nsys"
        / "nvfuser_h200_nsys2025.1.sqlite")


@pytest.mark.skipif(not NSYS.exists(), reason=f"{NSYS} absent (../shared/data)")
def test_recoverable_host_wait_excludes_startup() -> None:
    a = analyze([NSYS])
    assert a.views is not None and a.views.account is not None
    assert a.views.account.steady_fallback
    idle = [f for f in a.findings if f.pattern == "gpu-idle"]
    assert all(f.severity == "info" and not f.expected_effect for f in idle)
    (cw,) = [f for f in a.findings if f.pattern == "capture-window"]
    assert cw.severity == "red" and "capture-range=cudaProfilerApi" in cw.fix
    host_wait = a.views.metrics.idle.host_wait_ns
    startup = a.views.startup_ns[0]
    assert 0 < startup < host_wait
    eff = _host_wait_effect(host_wait, startup)
    assert eff.startswith(f"Up to {duration(host_wait - startup)} of host-wait idle")
    assert f"({duration(host_wait)} host wait less {duration(startup)} in start-up" in eff


NSYS_2024 = SHARED_DATA / "nsys" / "nvfuser_h200_nsys2024.6.sqlite"


@pytest.mark.skipif(not NSYS_2024.exists(), reason=f"{NSYS_2024} absent (../shared/data)")
def test_steady_state_notes_in_a_startup_capture_say_so() -> None:
    """nvFuser 2024.6: 19 kernels whose launch calls took 47.54 ms — first launches that load
    modules, start-up in the account since decision 0786, so no launch-bound finding fires at
    all; the kernel-side note that does (unfused-elementwise) says it was measured in start-up
    rather than reading as a steady-state problem."""
    a = analyze([NSYS_2024])
    assert a.views is not None and a.views.account is not None
    assert a.views.account.steady_fallback
    assert not [f for f in a.findings if f.pattern == "kernel-launch-bound"]
    (ue,) = [f for f in a.findings if f.pattern == "unfused-elementwise"]
    assert ue.severity == "info"
    assert ue.observation.endswith("so this says nothing about the steady state.")
    assert [f.pattern for f in a.findings if f.severity == "red"] == ["capture-window"]
