"""Runs of one-op kernels: consecutive kernels of the fusible families (op_roofline.yaml
`unfused_families`: pointwise math, copies/casts, activations, reductions) on one stream, with
no other GPU op between them.

A matmul, convolution, attention or communication kernel, or a memcpy / memset, ends a run:
a compiler fuses the elementwise work between two such ops into one kernel (Inductor: one
kernel per run of pointwise ops and reductions), not across them. A run's fused kernel moves at
least the bytes of the run's largest op, so its time is estimated as the run's longest kernel:
what a run of n kernels saves is its time minus its longest kernel; a kernel alone between two
other ops saves nothing. An estimate, stated as one: fusing independent tensors (q and k of a
rotary embedding) moves more than the largest op's bytes; fusing into a GEMM epilogue, less.
Facts only; detectors/unfused_elementwise.py judges them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from crossview.store.store import Store


@dataclass(frozen=True)
class FusionRuns:
    kernels: int  # kernels of the fusible families in scope
    kernel_ns: int  # their time
    runs: int  # runs of two or more such kernels
    run_kernels: int  # the kernels in those runs
    run_ns: int  # their time
    fused_ns: int  # Σ of each run's longest kernel: the estimate of what stays once fused

    @property
    def alone(self) -> int:
        """Kernels with another kind of GPU op right before and after them on their stream."""
        return self.kernels - self.run_kernels

    @property
    def saving_ns(self) -> int:
        return self.run_ns - self.fused_ns

    def to_dict(self) -> dict[str, int]:
        return {**asdict(self), "alone": self.alone, "saving_ns": self.saving_ns}


def compute(store: Store, families: list[str]) -> FusionRuns:
    """Runs over f_gpu (the filter's scope), per (artifact, device, stream) in start order."""
    row = store.sql(
        "WITH o AS (SELECT artifact_id, device, stream, start_ns, dur_ns,"
        " kind = 'kernel' AND list_contains($f, family) AS fus FROM f_gpu),"
        # a run id: the count of non-fusible ops so far on the stream (unchanged along a run)
        " r AS (SELECT *, count(*) FILTER (WHERE NOT fus) OVER (PARTITION BY artifact_id,"
        " device, stream ORDER BY start_ns, dur_ns ROWS UNBOUNDED PRECEDING) AS run FROM o),"
        " g AS (SELECT count(*) AS n, sum(dur_ns) AS t, max(dur_ns) AS m FROM r WHERE fus"
        " GROUP BY artifact_id, device, stream, run)"
        " SELECT coalesce(sum(n), 0), coalesce(sum(t), 0), count(*) FILTER (WHERE n > 1),"
        " coalesce(sum(n) FILTER (WHERE n > 1), 0), coalesce(sum(t) FILTER (WHERE n > 1), 0),"
        " coalesce(sum(m) FILTER (WHERE n > 1), 0) FROM g",
        {"f": families},
    ).fetchall()[0]
    return FusionRuns(*(int(x) for x in row))
