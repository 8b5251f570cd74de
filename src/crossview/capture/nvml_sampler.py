"""Sample NVML counters to JSON lines — the format sources/counters/nvml_jsonl.py reads
(spec: docs/input-formats.md).

    pip install 'crossview[nvml]'        # nvidia-ml-py, NVIDIA's NVML bindings
    python -m crossview.capture.nvml_sampler -o nvml.jsonl --interval-ms 100 --duration-s 60

Run it next to the workload (or around `vllm bench serve`), then `crossview analyze` the file
with the trace. A counter the GPU does not support is written as null, never guessed.
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import time
from collections.abc import Callable
from functools import partial
from typing import IO, Any

FORMAT = "crossview-nvml"


def _nvml() -> Any:
    try:
        # lazy: optional dependency (pynvml: extra `nvml`)
        import pynvml
    except ImportError:
        raise SystemExit("crossview: error: NVML sampling needs NVIDIA's `nvidia-ml-py` "
                         "package: pip install 'crossview[nvml]'") from None
    return pynvml


def _try(fn: Callable[[], Any]) -> Any:
    """An NVML query, or None when the GPU/driver does not support it."""
    try:
        return fn()
    except Exception:  # pynvml.NVMLError and subclasses: not supported / not available
        return None


def _text(v: Any) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def header(nv: Any, handles: list[Any], interval_ms: int) -> dict[str, Any]:
    devices = []
    for i, h in enumerate(handles):
        mem = _try(partial(nv.nvmlDeviceGetMemoryInfo, h))
        devices.append({"index": i, "name": _text(_try(partial(nv.nvmlDeviceGetName, h))),
                        "uuid": _text(_try(partial(nv.nvmlDeviceGetUUID, h))),
                        "mem_total_mib": mem.total / 1048576 if mem else None})
    return {"format": FORMAT, "version": 1, "hostname": socket.gethostname(),
            "interval_ms": interval_ms, "devices": devices}


def sample(nv: Any, index: int, h: Any, ts_ns: int) -> dict[str, Any]:
    util = _try(lambda: nv.nvmlDeviceGetUtilizationRates(h))
    mem = _try(lambda: nv.nvmlDeviceGetMemoryInfo(h))
    power = _try(lambda: nv.nvmlDeviceGetPowerUsage(h))  # mW
    limit = _try(lambda: nv.nvmlDeviceGetEnforcedPowerLimit(h))  # mW
    tx = _try(lambda: nv.nvmlDeviceGetPcieThroughput(h, nv.NVML_PCIE_UTIL_TX_BYTES))  # KB/s
    rx = _try(lambda: nv.nvmlDeviceGetPcieThroughput(h, nv.NVML_PCIE_UTIL_RX_BYTES))
    return {
        "ts_ns": ts_ns, "gpu": index,
        "gpu_util_pct": util.gpu if util else None,
        "mem_util_pct": util.memory if util else None,
        "mem_used_mib": mem.used / 1048576 if mem else None,
        "power_w": power / 1000 if power is not None else None,
        "power_limit_w": limit / 1000 if limit is not None else None,
        "sm_clock_mhz": _try(lambda: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM)),
        "mem_clock_mhz": _try(lambda: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM)),
        "temp_c": _try(lambda: nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU)),
        "pcie_tx_bytes_per_s": tx * 1024 if tx is not None else None,
        "pcie_rx_bytes_per_s": rx * 1024 if rx is not None else None,
        "energy_mj": _try(lambda: nv.nvmlDeviceGetTotalEnergyConsumption(h)),
    }


def run(out: IO[str], interval_ms: int, duration_s: float | None, nv: Any | None = None,
        clock: Callable[[], int] = time.time_ns, sleep: Callable[[float], object] = time.sleep,
        max_ticks: int | None = None, stop: Callable[[], bool] | None = None) -> int:
    """Write the header, then one line per GPU per tick until the duration, `stop()` turning
    true (a capture's background thread), or Ctrl-C."""
    nv = nv or _nvml()
    nv.nvmlInit()
    try:
        handles = [nv.nvmlDeviceGetHandleByIndex(i) for i in range(nv.nvmlDeviceGetCount())]
        out.write(json.dumps(header(nv, handles, interval_ms)) + "\n")
        start, ticks = clock(), 0
        while True:
            now = clock()
            if duration_s is not None and now - start >= duration_s * 1e9:
                break
            if stop is not None and stop():
                break
            for i, h in enumerate(handles):
                out.write(json.dumps(sample(nv, i, h, now)) + "\n")
            out.flush()
            ticks += 1
            if max_ticks is not None and ticks >= max_ticks:
                break
            sleep(max(0.0, interval_ms / 1000 - (clock() - now) / 1e9))
        return ticks
    except KeyboardInterrupt:
        return -1
    finally:
        nv.nvmlShutdown()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Sample NVML GPU counters to crossview JSON lines.")
    p.add_argument("-o", "--output", required=True, help="file to write (JSON lines)")
    p.add_argument("--interval-ms", type=int, default=100)
    p.add_argument("--duration-s", type=float, default=None, help="stop after (default: Ctrl-C)")
    a = p.parse_args(argv)
    with open(a.output, "w", encoding="utf-8") as f:
        run(f, a.interval_ms, a.duration_s)
    return 0


if __name__ == "__main__":
    sys.exit(main())
