"""What the machine says about itself: GPUs (via NVML), driver, CUDA, library versions.

Every probe may fail (no driver, no NVML bindings, no torch); a failure becomes a line in
`problems` and the field stays unknown — it is never guessed.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import socket
import sys
from dataclasses import dataclass, field
from typing import Any

# engines whose version is worth recording when the workload imported them (first one wins)
ENGINES = ("vllm", "sglang", "tensorrt_llm", "lmdeploy")


@dataclass
class GpuInfo:
    index: int
    name: str | None
    uuid: str | None


@dataclass
class MachineFacts:
    hostname: str
    gpus: list[GpuInfo] = field(default_factory=list)
    driver: str | None = None
    cuda_driver: str | None = None  # the CUDA version the driver supports (NVML)
    nvml_ok: bool = False
    problems: list[str] = field(default_factory=list)


def _text(v: Any) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def load_nvml() -> tuple[Any | None, str | None]:
    """pynvml initialised, or (None, why not)."""
    try:
        # lazy: optional dependency (pynvml: extra `nvml`)
        import pynvml
    except ImportError:
        return None, ("NVML unavailable: the `nvidia-ml-py` package is not installed "
                      "(pip install 'crossview[capture]'); no GPU counters sampled")
    try:
        pynvml.nvmlInit()
    except Exception as e:  # NVMLError_LibraryNotFound, _DriverNotLoaded, …
        return None, f"NVML unavailable: {e} (no NVIDIA driver or GPU?); no GPU counters sampled"
    return pynvml, None


def probe(nv: Any | None = None) -> MachineFacts:
    """Hostname, and GPU names/UUIDs, driver and CUDA driver version when NVML answers."""
    facts = MachineFacts(hostname=socket.gethostname())
    why = None
    if nv is None:
        nv, why = load_nvml()
    else:
        nv.nvmlInit()
    if nv is None:
        facts.problems.append(why or "NVML unavailable")
        return facts
    try:
        facts.nvml_ok = True
        facts.driver = _text(nv.nvmlSystemGetDriverVersion())
        try:
            v = int(nv.nvmlSystemGetCudaDriverVersion())
            facts.cuda_driver = f"{v // 1000}.{v % 1000 // 10}"
        except Exception:
            pass
        for i in range(int(nv.nvmlDeviceGetCount())):
            h = nv.nvmlDeviceGetHandleByIndex(i)
            facts.gpus.append(GpuInfo(i, _text(nv.nvmlDeviceGetName(h)),
                                      _text(nv.nvmlDeviceGetUUID(h))))
        if not facts.gpus:
            facts.problems.append("NVML reports no GPU: CPU-only capture")
    except Exception as e:
        facts.problems.append(f"NVML query failed: {e}")
    finally:
        with contextlib.suppress(Exception):
            nv.nvmlShutdown()
    return facts


def version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def engine_in_process() -> tuple[str | None, str | None]:
    """The serving engine this process imported (not merely installed), with its version."""
    for name in ENGINES:
        if name in sys.modules:
            return name, version(name.replace("_", "-")) or version(name)
    return None, None


def torch_facts() -> dict[str, str]:
    """torch and its CUDA runtime version, when torch is already imported (never imports it)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return {}
    out = {"torch": str(torch.__version__)}
    cuda = getattr(torch.version, "cuda", None)
    if cuda:
        out["cuda"] = str(cuda)
    return out
