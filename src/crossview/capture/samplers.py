"""The background samplers of a capture: NVML (every visible GPU) and host CPU, each on its own
daemon thread, writing the JSON lines crossview reads, until stopped."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from crossview.capture import host_sampler, nvml_sampler
from crossview.capture.machine import load_nvml

NVML_FILE = "metrics/nvml.jsonl"
HOST_FILE = "metrics/host_cpu.jsonl"


@dataclass
class Samplers:
    bundle: Path
    interval_ms: int = 100
    host_interval_ms: int = 500
    gpu: bool = True  # False when the machine probe found no GPU
    nv: Any | None = None  # an NVML module (tests pass a stand-in); None → pynvml
    problems: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)  # bundle-relative paths written
    _stop: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)
    _handles: list[IO[str]] = field(default_factory=list)

    def _open(self, rel: str) -> IO[str]:
        path = self.bundle / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        f = path.open("w", encoding="utf-8")
        self._handles.append(f)
        self.files.append(rel)
        return f

    def _thread(self, name: str, target: Any) -> None:
        def guarded() -> None:
            try:
                target()
            except Exception as e:  # a sampler failing must not kill the workload
                self.problems.append(f"{name} sampler stopped: {type(e).__name__}: {e}")
        t = threading.Thread(target=guarded, name=f"crossview-{name}", daemon=True)
        t.start()
        self._threads.append(t)

    def start(self) -> Samplers:
        if self.gpu:
            nv = self.nv
            if nv is None:
                nv, why = load_nvml()
                if nv is None:
                    self.problems.append(why or "NVML unavailable")
                else:
                    nv.nvmlShutdown()  # run() initialises it again on its own thread
            if nv is not None:
                out = self._open(NVML_FILE)
                self._thread("NVML", lambda: nvml_sampler.run(
                    out, self.interval_ms, None, nv=nv, sleep=self._stop.wait,
                    stop=self._stop.is_set))
        if host_sampler.PROC_STAT.exists():
            out = self._open(HOST_FILE)
            self._thread("host CPU", lambda: host_sampler.run(out, self.host_interval_ms,
                                                              self._stop))
        else:
            self.problems.append("no /proc/stat: host CPU utilization not sampled")
        return self

    def stop(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(timeout=5)
        for f in self._handles:
            f.close()
        for rel in list(self.files):  # a header without samples would be rejected as empty
            path = self.bundle / rel
            if path.exists() and len(path.read_text(encoding="utf-8").splitlines()) < 2:
                path.unlink()
                self.files.remove(rel)
                self.problems.append(f"{rel}: no sample taken (capture shorter than one "
                                     "sampling interval)")
