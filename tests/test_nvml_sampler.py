"""The NVML sampler writes what the NVML JSONL reader reads. No GPU here: NVML is a SYNTHETIC
stand-in with pynvml's call names and units (memory in bytes, power in mW, PCIe in KB/s);
an unsupported query raises, as pynvml's NVMLError does, and must come out as null."""

from __future__ import annotations

import io
from pathlib import Path
from types import SimpleNamespace

from crossview.capture.nvml_sampler import run
from crossview.sources.counters import nvml_jsonl
from crossview.store.store import Store


class FakeNVML:
    NVML_CLOCK_SM, NVML_CLOCK_MEM, NVML_TEMPERATURE_GPU = 1, 2, 0
    NVML_PCIE_UTIL_TX_BYTES, NVML_PCIE_UTIL_RX_BYTES = 0, 1

    def __init__(self) -> None:
        self.calls = 0

    def nvmlInit(self) -> None: ...
    def nvmlShutdown(self) -> None: ...
    def nvmlDeviceGetCount(self) -> int: return 2
    def nvmlDeviceGetHandleByIndex(self, i: int) -> int: return i
    def nvmlDeviceGetName(self, h: int) -> bytes: return b"NVIDIA H200"
    def nvmlDeviceGetUUID(self, h: int) -> str: return f"GPU-{h}"

    def nvmlDeviceGetMemoryInfo(self, h: int) -> SimpleNamespace:
        return SimpleNamespace(total=150_000 * 1048576, used=(80_000 + h) * 1048576)

    def nvmlDeviceGetUtilizationRates(self, h: int) -> SimpleNamespace:
        self.calls += 1
        return SimpleNamespace(gpu=90 + h, memory=40)

    def nvmlDeviceGetPowerUsage(self, h: int) -> int: return 612_345
    def nvmlDeviceGetEnforcedPowerLimit(self, h: int) -> int: return 700_000
    def nvmlDeviceGetClockInfo(self, h: int, kind: int) -> int: return 1980 if kind == 1 else 3201
    def nvmlDeviceGetTemperature(self, h: int, kind: int) -> int: return 55

    def nvmlDeviceGetPcieThroughput(self, h: int, kind: int) -> int:
        raise RuntimeError("NVML_ERROR_NOT_SUPPORTED")

    def nvmlDeviceGetTotalEnergyConsumption(self, h: int) -> int: return 10_000


def test_sampler_output_reads_back(tmp_path: Path) -> None:
    ticks = iter(range(0, 10**10, 100_000_000))
    buf = io.StringIO()
    n = run(buf, 100, None, nv=FakeNVML(), clock=lambda: next(ticks), sleep=lambda s: None,
            max_ticks=3)
    assert n == 3
    path = tmp_path / "nvml.jsonl"
    path.write_text(buf.getvalue())
    st = Store()
    rep = nvml_jsonl.read(path, st)
    assert rep.problems == []
    got = st.sql("SELECT device, count(*), avg(value) FROM metrics WHERE metric = 'gpu_util'"
                 " GROUP BY 1 ORDER BY 1").fetchall()
    assert got == [(0, 3, 90.0), (1, 3, 91.0)]
    assert st.sql("SELECT DISTINCT value, unit FROM metrics WHERE metric = 'power'").fetchall() \
        == [(612.345, "W")]
    assert st.sql("SELECT count(*) FROM metrics WHERE metric LIKE 'pcie%'").fetchall() == [(0,)]
    assert st.sql("SELECT name, mem_bytes FROM devices ORDER BY device").fetchall() == [
        ("NVIDIA H200", 150_000 * 1048576)] * 2
