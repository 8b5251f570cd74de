"""Chrome trace-event JSON of the normalized timeline (opens in ui.perfetto.dev and
chrome://tracing; crossview's own Kineto reader reads it back).

Host ops are `X` events per process/thread with Kineto's categories (cpu_op, cuda_runtime,
python_function, user_annotation); kernels, copies and memsets are `X` events per device
(pid) and stream (tid) with `args.device/stream`; every GPU op carries `args.correlation` =
the crossview id of its launching call, which carries the same value, so Kineto-format
readers link them without flows; `s`/`f` flow events (cat ac2g, as Kineto writes them) draw
the launch → kernel arrows. Times are µs (the format's unit) from the earliest event in
scope, with ns precision; the absolute base is `otherData.time_base_ns`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from crossview.core.inert import name as show  # names are data in the viewer
from crossview.errors import UsageError
from crossview.export.perfetto_ids import Ids
from crossview.export.speedscope import exporter
from crossview.store.store import Store
from crossview.views import captures, timeline_events

HOST_CAT = {"op": "cpu_op", "runtime": "cuda_runtime", "python": "python_function",
            "annotation": "user_annotation"}  # other kinds keep their own name
GPU_CAT = {"kernel": "kernel", "memcpy": "gpu_memcpy", "memset": "gpu_memset",
           "sync": "cuda_sync"}


@dataclass
class TraceStats:
    host_events: int
    gpu_events: int
    kernels: int
    kernel_ns: int
    flows: int
    processes: int


def _us(ns: int, base: int) -> float:
    return (ns - base) / 1000


def _json_or_text(text: str | None, memo: dict[str, Any]) -> Any:
    """grid/block as stored ("[1,1,1]") go back to arrays, as Kineto writes them."""
    if text is None:
        return None
    if text not in memo:
        try:
            memo[text] = msgspec.json.decode(text) if text.startswith("[") else text
        except msgspec.DecodeError:
            memo[text] = text
    return memo[text]


def render(store: Store) -> tuple[bytes, TraceStats]:
    """The timeline in scope (f_host, f_gpu) as one trace-event document."""
    base = timeline_events.time_base_ns(store)
    if base is None:
        raise UsageError("nothing to export as a timeline: no timed host or GPU events in "
                         "scope (summary-only, sampled-only or metrics input?)")
    arts = captures.paths(store)
    many = len(timeline_events.artifacts(store)) > 1

    def suffix(a: int) -> str:
        return f" ({show(Path(arts.get(a, '?')).name)})" if many else ""

    ids = Ids()
    events: list[dict[str, Any]] = []
    launch_at: dict[int, tuple[int, int, float]] = {}
    n_host = 0
    for batch in timeline_events.host_events(store):
        for a, op, pid, tid, kind, name, start, dur, launches in batch:
            t = ids.process("host", a, str(pid), f"host process {pid}{suffix(a)}")
            tt = ids.thread(t, str(tid))
            ev: dict[str, Any] = {"ph": "X", "cat": HOST_CAT.get(kind, kind), "name": show(name),
                                  "pid": t.pid, "tid": tt, "ts": _us(start, base),
                                  "dur": dur / 1000}
            if launches:
                ev["args"] = {"correlation": op}
                launch_at[op] = (t.pid, tt, ev["ts"])
            events.append(ev)
            n_host += 1

    dev_names = {(d.artifact_id, d.device): show(d.name) for d in captures.devices(store)
                 if d.name is not None}
    memo: dict[str, Any] = {}
    n_gpu = kernels = kernel_ns = flows = 0
    for gpu_batch in timeline_events.gpu_events(store):
        for (a, gid, dev, stream, kind, name, fam, start, dur, launch, graph, nbytes, grid,
             block, regs, coll) in gpu_batch:
            label = f"GPU {dev}" + (f" {dev_names[(a, dev)]}" if (a, dev) in dev_names else "")
            t = ids.process("gpu", a, str(dev), label + suffix(a))
            tt = ids.thread(t, "unknown" if stream is None else str(stream))
            # an unlinked op gets a correlation no host call carries
            corr = launch if launch is not None else -1 - gid
            args: dict[str, Any] = {"device": dev, "stream": stream, "correlation": corr}
            for k, v in (("family", fam), ("bytes", nbytes), ("grid", _json_or_text(grid, memo)),
                         ("block", _json_or_text(block, memo)), ("registers per thread", regs),
                         ("Collective name", coll and show(coll))):
                if v is not None:
                    args[k] = v
            if graph:
                args["via graph"] = True
            ts = _us(start, base)
            events.append({"ph": "X", "cat": GPU_CAT.get(kind, kind), "name": show(name),
                           "pid": t.pid, "tid": tt, "ts": ts, "dur": dur / 1000, "args": args})
            n_gpu += 1
            if kind == "kernel":
                kernels += 1
                kernel_ns += dur
            src = launch_at.get(launch) if launch is not None else None
            if src is not None:
                flows += 1
                events.append({"ph": "s", "cat": "ac2g", "name": "ac2g", "id": gid,
                               "pid": src[0], "tid": src[1], "ts": src[2]})
                events.append({"ph": "f", "bp": "e", "cat": "ac2g", "name": "ac2g", "id": gid,
                               "pid": t.pid, "tid": tt, "ts": ts})
    doc: dict[str, Any] = {
        "traceEvents": ids.metadata() + events, "displayTimeUnit": "ns",
        "otherData": {"exporter": exporter(), "time_base_ns": base,
                      "artifacts": sorted({arts.get(a, "?") for _, a, _ in ids.tracks})},
    }
    props = _device_properties(store) if not many else []
    if props:
        doc["deviceProperties"] = props
    stats = TraceStats(n_host, n_gpu, kernels, kernel_ns, flows, len(ids.tracks))
    return msgspec.json.encode(doc), stats


def _device_properties(store: Store) -> list[dict[str, Any]]:
    """Kineto's deviceProperties for the devices in scope (one artifact), so a re-read keeps
    the GPU names."""
    out = []
    for g in captures.devices(store, in_scope=True):
        d: dict[str, Any] = {"id": g.device, "name": g.name or ""}
        for k, v in (("numSms", g.sm_count), ("totalGlobalMem", g.mem_bytes),
                     ("computeMajor", g.cc_major), ("computeMinor", g.cc_minor)):
            if v is not None:
                d[k] = v
        out.append(d)
    return out
