"""Build a synthetic multi-rank job from one real Kineto trace (test helper, not a test).

Each copy gets its rank in `distributedInfo`; on the straggler rank every event at or after
a point P (half-way between two consecutive communication kernels) is shifted later by a
known delay, so from the k-th collective on that rank arrives `delay_us` late. Times are
µs doubles in the trace; the shift is an exact add.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

COMM_MARKERS = ("nccl", "rccl")


def comm_kernels(events: list[dict]) -> list[dict]:
    return sorted((e for e in events if e.get("cat") == "kernel"
                   and any(m in e.get("name", "").lower() for m in COMM_MARKERS)),
                  key=lambda e: e["ts"])


def build(src: Path, out_dir: Path, world: int, straggler: int, delay_us: float,
          from_collective: int, clock_shift_us: float = 0.0) -> tuple[list[Path], int]:
    """Write rank files `job-rank-<r>.json.gz`; return them and how many collectives the
    straggler is late for. `clock_shift_us` moves the straggler's whole timeline (a rank on
    another node whose clock differs) on top of the planted delay."""
    doc = json.loads(gzip.decompress(src.read_bytes()))
    comm = comm_kernels(doc["traceEvents"])
    k = from_collective
    p = (comm[k - 1]["ts"] + comm[k - 1]["dur"] + comm[k]["ts"]) / 2
    paths = []
    for r in range(world):
        d = json.loads(json.dumps(doc)) if r == straggler else doc
        d["distributedInfo"] = {**doc.get("distributedInfo", {}), "rank": r,
                                "world_size": world}
        if r == straggler:
            for e in d["traceEvents"]:
                if isinstance(e.get("ts"), (int, float)):
                    e["ts"] = e["ts"] + (delay_us if e["ts"] >= p else 0.0) + clock_shift_us
        path = out_dir / f"job-rank-{r}.json.gz"
        path.write_bytes(gzip.compress(json.dumps(d).encode(), compresslevel=1))
        paths.append(path)
    doc["distributedInfo"] = {}
    return paths, len(comm) - k


def build_one_late(src: Path, out_dir: Path, world: int, straggler: int, delay_us: float,
                   k: int, plant: str) -> list[Path]:
    """A job where the straggler is late for collective k only, as on real hardware: on the
    straggler everything from that collective's start on moves `delay_us` later and the gap
    is filled by planted work — a host op `planted_host_stall` on the thread that launched
    the collective (plant="host") or a kernel `planted_compute_kernel` on the compute stream
    (plant="kernel"); on the other ranks the collective kernel itself lasts `delay_us`
    longer (they wait inside it) and everything after its start moves as much. Every
    collective then ends together; only collective k starts skewed, by exactly the delay."""
    doc = json.loads(gzip.decompress(src.read_bytes()))
    ck = comm_kernels(doc["traceEvents"])[k]
    s_k = ck["ts"]
    launch = next(e for e in doc["traceEvents"] if e.get("cat") == "cuda_runtime"
                  and e.get("args", {}).get("correlation") == ck["args"]["correlation"])
    compute_stream = next(e["args"]["stream"] for e in doc["traceEvents"]
                          if e.get("cat") == "kernel" and e is not ck
                          and e["args"].get("stream") != ck["args"]["stream"])
    paths = []
    for r in range(world):
        d = json.loads(json.dumps(doc))
        d["distributedInfo"] = {**doc.get("distributedInfo", {}), "rank": r,
                                "world_size": world}
        for e in d["traceEvents"]:
            ts = e.get("ts")
            if not isinstance(ts, (int, float)):
                continue
            # the straggler's collective k itself moves too; the others' stays (it stretches)
            if ts > s_k or (r == straggler and ts == s_k):
                e["ts"] = ts + delay_us
            elif r != straggler and ts == s_k and e.get("cat") == "kernel" \
                    and e.get("name") == ck["name"]:
                e["dur"] = e["dur"] + delay_us
        if r == straggler and plant == "host":
            d["traceEvents"].append({"ph": "X", "cat": "cpu_op", "name": "planted_host_stall",
                                     "pid": launch["pid"], "tid": launch["tid"], "ts": s_k,
                                     "dur": delay_us, "args": {}})
        elif r == straggler:
            d["traceEvents"].append({"ph": "X", "cat": "kernel",
                                     "name": "planted_compute_kernel", "pid": ck["pid"],
                                     "tid": compute_stream, "ts": s_k, "dur": delay_us,
                                     "args": {"device": ck["args"]["device"],
                                              "stream": compute_stream}})
        path = out_dir / f"job-rank-{r}.json.gz"
        path.write_bytes(gzip.compress(json.dumps(d).encode(), compresslevel=1))
        paths.append(path)
    return paths


def build_late(src: Path, out_dir: Path, world: int, late: int, delay_us: float,
               ks: list[int], shifts_us: dict[int, float]) -> list[Path]:
    """A job where rank `late` is late for each collective in `ks`, as on real hardware:
    on that rank a host op `planted_host_stall` of `delay_us` sits on the launching thread
    right before the collective's launch call, so the launch, the collective and everything
    after move `delay_us` later; on the other ranks that collective's kernel spins `delay_us`
    longer and everything after its start moves as much — every collective still ends
    together. An op or kernel running across the cut lasts `delay_us` longer (nesting holds).
    Then each rank's whole timeline moves by shifts_us[rank] (its node's clock): only the
    collectives' ends can align the ranks."""
    doc = json.loads(gzip.decompress(src.read_bytes()))
    comm = comm_kernels(doc["traceEvents"])
    launch = {e["args"]["correlation"]: e for e in doc["traceEvents"]
              if e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {})}
    plan = [(comm[k]["ts"], comm[k]["name"], launch[comm[k]["args"]["correlation"]])
            for k in sorted(ks)]
    paths = []
    for r in range(world):
        d = json.loads(json.dumps(doc))
        d["distributedInfo"] = {**doc.get("distributedInfo", {}), "rank": r,
                                "world_size": world}
        events = d["traceEvents"]
        for j, (s_k, name, lc) in enumerate(plan):
            moved = j * delay_us  # the earlier plants moved everything after them
            cut = (lc["ts"] if r == late else s_k) + moved
            for e in events:
                ts = e.get("ts")
                if not isinstance(ts, (int, float)):
                    continue
                if ts >= cut if r == late else ts > cut:
                    e["ts"] = ts + delay_us
                elif r != late and ts == cut and e.get("cat") == "kernel" and e["name"] == name:
                    e["dur"] = e["dur"] + delay_us  # it spins for the late rank
                elif ts < cut < ts + e.get("dur", 0):
                    e["dur"] = e["dur"] + delay_us  # running across the cut
            if r == late:
                events.append({"ph": "X", "cat": "cpu_op", "name": "planted_host_stall",
                               "pid": lc["pid"], "tid": lc["tid"], "ts": cut, "dur": delay_us,
                               "args": {}})
        shift = shifts_us.get(r, 0.0)
        for e in events:
            if isinstance(e.get("ts"), (int, float)):
                e["ts"] = e["ts"] + shift
        path = out_dir / f"job-rank-{r}.json.gz"
        path.write_bytes(gzip.compress(json.dumps(d).encode(), compresslevel=1))
        paths.append(path)
    return paths
