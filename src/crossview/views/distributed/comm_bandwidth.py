"""Collective and copy bandwidth from the trace (rigor L2): what each transfer achieved.

Collectives: per (type, process group, message size, dtype, ranks), from the sizes the trace
records on the communication kernel (Kineto `In msg nelems` / `Out msg nelems` / `Group
size` / `dtype`, stored in op_args): count, kernel time, algorithm bandwidth algbw = S ÷ t
and bus bandwidth busbw = algbw × NCCL's factor for the type (knowledge/comm_bandwidth.yaml,
from nccl-tests PERFORMANCE.md), averaged as Σ S ÷ Σ t over the calls. The ceiling is the
GPU's NVLink per-direction bandwidth (sol_ceilings.yaml) when the group fits in the GPUs the
trace lists (one node), else InfiniBand NDR per direction (an assumption, said so).
Kernel time includes any wait for peers, so busbw is a lower bound of the link's speed;
where the ranks of a job are analyzed together, each call's transfer part (its time after the
last member arrived, views/distributed/rank_comm.py) gives busbw over the transfer alone.

Copies: per copy kind and memory kinds (HtoD Pageable→Device, …): count, bytes, time and
bytes/s against the PCIe / NVLink per-direction or HBM ceiling (comm_bandwidth.yaml).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from functools import cache
from typing import Any

from crossview.knowledge import hardware
from crossview.knowledge.collectives import name_misleads, normalize, typed
from crossview.knowledge.hardware import HwSpec
from crossview.knowledge.loader import load_yaml
from crossview.opmodels import dtypes
from crossview.store.store import Store
from crossview.views.distributed.collectives import LAUNCH_OP_JOIN


@cache
def table() -> dict[str, Any]:
    return dict(load_yaml("comm_bandwidth.yaml"))


def bus_factor(op: str, n: int) -> float | None:
    """NCCL's busbw / algbw for a collective type over n ranks (None: type not listed)."""
    f = table()["bus_factor"].get(normalize(op))
    if f is None or n < 1:
        return None
    return f["num"] * ((n - 1) / n if f["minus_one"] else 1.0)


@dataclass
class CollectiveBw:
    op: str
    group: str
    ranks: int | None
    dtype: str | None
    message_bytes: int | None  # S per call
    count: int
    time_ns: int
    mean_ns: float
    algbw_bytes_per_s: float | None
    busbw_bytes_per_s: float | None
    bus_factor: float | None
    ceiling_bytes_per_s: float | None
    ceiling: str  # what the ceiling is (NVLink per direction of <GPU>, IB NDR, none: why)
    pct_of_ceiling: float | None
    sizes_from: str = "kernel args"  # kernel args | launching op's … | not recorded
    # calls whose kernel name spells another collective (NCCL 2.12–2.13 name every kernel
    # SendRecv): their type came from the kernel args or the op holding the launch call
    kernel_name_differs: int = 0
    # calls typed by their kernel name alone (no args, launch call not in the capture)
    typed_by_name: int = 0
    # ranks analyzed together: the calls' time after their last member arrived, and busbw
    # over it (None: one rank, no peer to align with)
    transfer_ns: int | None = None
    busbw_transfer_bytes_per_s: float | None = None
    pct_of_ceiling_transfer: float | None = None

    def to_dict(self) -> dict[str, object]:
        d = asdict(self)
        if self.transfer_ns is None:  # one rank: the contract as before
            for k in ("transfer_ns", "busbw_transfer_bytes_per_s", "pct_of_ceiling_transfer"):
                d.pop(k)
        return d


@dataclass
class CopyBw:
    kind: str  # HtoD, DtoH, DtoD, PtoP, …
    mem: str | None  # memory kinds as recorded (Pageable -> Device, …)
    count: int
    bytes: int
    time_ns: int
    bytes_per_s: float | None
    ceiling_bytes_per_s: float | None
    ceiling: str
    pct_of_ceiling: float | None

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass
class CommBandwidth:
    collectives: list[CollectiveBw]
    copies: list[CopyBw]
    note: str  # what was missing (sizes not recorded, GPU unknown)

    def to_dict(self) -> dict[str, object]:
        return {"collectives": [c.to_dict() for c in self.collectives],
                "copies": [c.to_dict() for c in self.copies], "note": self.note}


def _spec_and_gpus(store: Store) -> tuple[HwSpec | None, int]:
    rows = store.sql(
        "SELECT name, sm_count, mem_bytes, cc_major, cc_minor FROM devices"
        " WHERE artifact_id IN (SELECT DISTINCT artifact_id FROM f_gpu)").fetchall()
    spec = None
    for name, sms, mem, ma, mi in rows:
        spec = spec or hardware.match(name, sm_count=sms, mem_bytes=mem,
                                      cc=f"{ma}.{mi}" if ma is not None else None)
    return spec, len(rows)


def _per_direction(total: float | None, direction: str | None) -> float | None:
    if total is None:
        return None
    return total / 2 if direction == "bidirectional" else total


def compute(store: Store, transfers: tuple[list[int], list[int], list[int]] | None = None
            ) -> CommBandwidth:
    """transfers: (artifact ids, kernel starts, transfer ns) of the collective calls whose
    transfer part is known (views/distributed/rank_comm.transfers)."""
    spec, n_gpus = _spec_and_gpus(store)
    join, tsum, params = "", "NULL::BIGINT", {}
    if transfers is not None and transfers[0]:
        join = ("LEFT JOIN (SELECT unnest($ta) AS a, unnest($ts) AS s, unnest($tt) AS t) x"
                " ON x.a = g.artifact_id AND x.s = g.start_ns")
        tsum = "sum(x.t)"
        params = {"ta": transfers[0], "ts": transfers[1], "tt": transfers[2]}
    # sizes: the kernel's own args first; else the launching op's (record_param_comms
    # args, or its first tensor input: symm_mem / custom all-reduce ops record only that);
    # the type: the kernel's args, else the op holding the launch call (`nccl:all_reduce`)
    rows = store.sql(
        f"""
        SELECT g.collective, g.name, lp.name, coalesce('pg ' || nullif(g.process_group, ''),
               'stream ' || g.stream), a.group_size, a.dtype,
               greatest(a.in_nelems, a.out_nelems), p.group_size, p.dtype,
               greatest(p.in_nelems, p.out_nelems), p.input_dims, p.input_types,
               art.world_size, count(*), sum(g.dur_ns), {tsum}
        FROM f_gpu g LEFT JOIN op_args a ON a.op_id = g.gpu_op_id AND a.on_gpu
        {LAUNCH_OP_JOIN}
        LEFT JOIN op_args p ON p.op_id = r.parent AND NOT p.on_gpu
        LEFT JOIN artifacts art ON art.artifact_id = g.artifact_id
        {join}
        WHERE g.kind = 'kernel' AND g.family = 'comm'
        GROUP BY ALL ORDER BY 15 DESC
        """, params
    ).fetchall()
    notes: list[str] = []
    colls: dict[tuple[Any, ...], list[Any]] = {}
    for (coll, name, launch_op, group, n, dt, nel, pn, pdt, pnel, pdims, ptypes, world, cnt,
         ns, tns) in rows:
        op, by_name = typed(coll, name or "", launch_op)
        first = op in table()["first_input_types"]
        key = (op, group, *_sizes(n, dt, nel, pn, pdt, pnel, pdims if first else None, ptypes,
                                  world))
        acc = colls.setdefault(key, [0, 0, 0, 0, None])
        acc[0] += int(cnt)
        acc[1] += int(ns)
        acc[2] += int(cnt) if not by_name and name_misleads(name or "", op) else 0
        acc[3] += int(cnt) if by_name else 0
        if tns is not None:
            acc[4] = (acc[4] or 0) + int(tns)
    out = [_coll(k, c, ns, spec, n_gpus, other, by_name, tns)
           for k, (c, ns, other, by_name, tns) in colls.items()]
    _disproved_per_group(out)
    out.sort(key=lambda c: -c.time_ns)
    if out and all(c.message_bytes is None for c in out):
        notes.append("the trace records no collective sizes (PyTorch ≥ 2.1 with NCCL records "
                     "them on the kernel): no bandwidth")
    misnamed = sum(c.kernel_name_differs for c in out)
    if misnamed:
        notes.append(f"{misnamed:,} communication kernels are named after another collective "
                     "than the one their launching op records (NCCL 2.12–2.13 name every "
                     "kernel after one function, NVIDIA/nccl#714): types are the launching "
                     "op's; a type marked \"kernel name only\" is a guess")
    if spec is None and (out or n_gpus):
        notes.append("the GPU is not in sol_ceilings.yaml: no interconnect ceiling")
    return CommBandwidth(out, _copies(store, spec), "; ".join(notes))


def _sizes(n: Any, dt: Any, nel: Any, pn: Any, pdt: Any, pnel: Any, pdims: Any, ptypes: Any,
           world: Any) -> tuple[int | None, str | None, int | None, str]:
    """(ranks, dtype, message bytes, where the sizes came from)."""
    by = table()["dtype_bytes"]
    if nel is not None and by.get(dt):
        return n, dt, int(nel * by[dt]), "kernel args"
    if pnel is not None and by.get(pdt):
        return pn, pdt, int(pnel * by[pdt]), "launching op's record_param_comms args"
    if pdims:
        try:
            d0, t0 = json.loads(pdims)[0], json.loads(ptypes or "[]")[0]
        except (ValueError, IndexError, TypeError):
            d0, t0 = None, None
        t = dtypes.info(str(t0)) if t0 is not None else None
        if isinstance(d0, list) and d0 and all(isinstance(x, int) for x in d0) and t:
            return (n or world, t.name, int(math.prod(d0) * t.bytes),
                    "launching op's first input" + ("" if n else
                                                   f" (ranks = the trace's world size {world}: "
                                                   "assumed)" if world else ""))
    return n, dt, None, "not recorded"


def _coll(key: tuple[Any, ...], count: int, ns: int, spec: HwSpec | None, n_gpus: int,
          kernel_name_differs: int, typed_by_name: int,
          transfer_ns: int | None = None) -> CollectiveBw:
    op, group, n, dt, size, sizes_from = key
    alg = size * count / (ns * 1e-9) if size is not None and ns else None
    fac = bus_factor(op, int(n)) if n else None
    bus = alg * fac if alg is not None and fac is not None else None
    ceil, what = None, "no ceiling: GPU unknown"
    if n and n_gpus and int(n) > n_gpus:
        ceil = table()["network"]["ib_ndr_gb_s"] * 1e9
        what = (f"InfiniBand NDR per direction (assumed: the group of {n} ranks spans more "
                f"than the {n_gpus} GPUs of this node)")
    elif spec is not None:
        ceil = _per_direction(spec.nvlink_bytes_per_s, spec.nvlink_direction)
        what = (f"NVLink per direction of {spec.name}" if ceil
                else f"{spec.name}: no NVLink figure")
    pct = 100.0 * bus / ceil if bus is not None and ceil else None
    if pct is not None and ceil and pct > 100.0:
        # a busbw above the ceiling disproves it for this group (an IB rail per GPU rather
        # than one NIC, one NVLink domain across boards): no percentage of a wrong ceiling
        what = (f"none: the busbw exceeds {what} ({ceil / 1e9:.0f} GB/s), so that ceiling "
                "does not bound this group")
        ceil, pct = None, None
    out = CollectiveBw(op, group, int(n) if n else None, dt, size, count, ns,
                       ns / count if count else 0.0, alg, bus, fac, ceil, what, pct,
                       sizes_from, kernel_name_differs, typed_by_name)
    if transfer_ns is not None:
        out.transfer_ns = transfer_ns
        if size is not None and fac is not None and transfer_ns > 0:
            out.busbw_transfer_bytes_per_s = size * count / (transfer_ns * 1e-9) * fac
            pct_t = 100.0 * out.busbw_transfer_bytes_per_s / ceil if ceil else None
            # above the ceiling: the transfer part is mis-measured (clock error), no score
            out.pct_of_ceiling_transfer = pct_t if pct_t is not None and pct_t <= 100 else None
    return out


def _disproved_per_group(out: list[CollectiveBw]) -> None:
    """A ceiling one collective's busbw exceeds is disproved for its whole group (same group
    and rank count: the same links): no other row of the group is scored against it
    (hta_a100_16rank: the 1.79 GB all-reduce at 136 GB/s disproves the assumed 50 GB/s IB
    NDR, so the group's 1.47 MB all-reduce is not "7.9%" of it)."""
    gone = {(c.group, c.ranks): c.ceiling for c in out if c.ceiling.startswith("none: ")}
    for c in out:
        why = gone.get((c.group, c.ranks))
        if why is not None and c.pct_of_ceiling is not None:
            c.ceiling, c.ceiling_bytes_per_s, c.pct_of_ceiling = why, None, None
            c.pct_of_ceiling_transfer = None


def _copies(store: Store, spec: HwSpec | None) -> list[CopyBw]:
    out = []
    for kind, mem, cnt, nbytes, ns in store.sql(
        "SELECT coalesce(copy_kind, name), mem_kinds, count(*), coalesce(sum(bytes), 0),"
        " sum(dur_ns) FROM f_gpu WHERE kind = 'memcpy' GROUP BY ALL ORDER BY 5 DESC"
    ).fetchall():
        rate = int(nbytes) / (int(ns) * 1e-9) if ns and nbytes else None
        which = table()["copy_ceiling"].get(kind)
        ceil, what = _copy_ceiling(which, spec)
        out.append(CopyBw(str(kind), mem, int(cnt), int(nbytes), int(ns), rate, ceil, what,
                          100.0 * rate / ceil if rate is not None and ceil else None))
    return out


def _copy_ceiling(which: str | None, spec: HwSpec | None) -> tuple[float | None, str]:
    if which is None:
        return None, "no ceiling for this copy kind"
    if spec is None:
        return None, "no ceiling: GPU unknown"
    if which == "pcie":
        c = _per_direction(spec.pcie_bytes_per_s, spec.pcie_direction)
        return c, f"PCIe per direction of {spec.name}"
    if which == "nvlink":
        c = _per_direction(spec.nvlink_bytes_per_s, spec.nvlink_direction)
        return c, f"NVLink per direction of {spec.name}"
    c = spec.dram_bytes_per_s / 2 if spec.dram_bytes_per_s else None
    return c, f"half the HBM bandwidth of {spec.name} (a copy reads and writes each byte)"
