"""The Filter: one object that every view takes, resolved once and echoed in every output."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass(frozen=True)
class Filter:
    """What the user asked for. ``None`` means "all"."""

    device: int | None = None
    stream: int | None = None
    pid: str | None = None
    tid: str | None = None
    window_ns: tuple[int, int] | None = None  # absolute [start, end) in trace ns
    annotation: str | None = None  # host user_annotation / NVTX range name
    artifact: str | None = None  # path (or file name) of one artifact
    step: str | None = None  # "N" or "A:B": steps by number (scope/step_detect.py), a window


@dataclass(frozen=True)
class ResolvedFilter:
    """The filter after resolution against the store: what was actually selected."""

    requested: Filter
    artifacts: tuple[str, ...]
    devices: tuple[str, ...]  # "artifact#device" labels that hold kernels after filtering
    streams: tuple[int, ...]
    window_ns: tuple[int, int] | None  # the kernel-time extent actually covered
    notes: tuple[str, ...] = field(default_factory=tuple)
    # the capture holds GPU ops and the filter selected none of them (a host-only slice of a
    # GPU capture, not a CPU-only capture)
    gpu_elsewhere: bool = False

    def to_dict(self) -> dict[str, object]:
        req = {k: v for k, v in asdict(self.requested).items()}
        if req["window_ns"] is not None:
            req["window_ns"] = list(req["window_ns"])
        return {
            "requested": req,
            "artifacts": list(self.artifacts),
            "devices": list(self.devices),
            "streams": list(self.streams),
            "window_ns": list(self.window_ns) if self.window_ns else None,
            "notes": list(self.notes),
            "gpu_elsewhere": self.gpu_elsewhere,
        }

    def describe(self) -> str:
        """One human line: what the numbers below cover."""
        r = self.requested
        parts = [
            f"device {r.device}" if r.device is not None else "all devices",
            f"stream {r.stream}" if r.stream is not None else "all streams",
        ]
        if r.pid is not None:
            parts.append(f"pid {r.pid}")
        if r.tid is not None:
            parts.append(f"tid {r.tid}")
        if r.annotation is not None:
            parts.append(f"annotation '{r.annotation}'")
        if r.step is not None:
            parts.append(f"step {r.step}")
        if r.window_ns is not None:
            parts.append(f"window {r.window_ns[0]}–{r.window_ns[1]} ns")
        if self.window_ns is not None:
            span_ms = (self.window_ns[1] - self.window_ns[0]) / 1e6
            parts.append(f"kernel span {span_ms:,.3f} ms")
        return ", ".join(parts)
