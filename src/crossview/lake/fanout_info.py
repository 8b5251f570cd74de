"""How `analyze --workers/--dask` ran (lake/rank_fanout.py): the record an Analysis carries,
kept apart so analysis.py can name it without importing the fan-out that imports analysis."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class FanoutInfo:
    """How a fanned-out analysis ran and which rank the single-rank parts describe."""

    engine: str
    rank_files: int  # files summarized in workers
    detail_rank: int
    detail_path: str
    detail_why: str
    worker_peak_rss_kib: dict[str, int]  # worker pid → its peak RSS (ru_maxrss)

    def describe(self) -> str:
        peak = max(self.worker_peak_rss_kib.values(), default=0) / 1024
        return (f"{self.rank_files} input files summarized one per task on {self.engine} "
                f"(peak RSS {peak:.0f} MiB per worker); the rank table and stragglers cover "
                f"every rank, the metrics, GPU/CPU views and other findings describe rank "
                f"{self.detail_rank} (`{self.detail_path}`, {self.detail_why}) and any "
                "non-rank inputs")

    def to_dict(self) -> dict[str, object]:
        return {"engine": self.engine, "rank_files": self.rank_files,
                "detail_rank": self.detail_rank, "detail_path": self.detail_path,
                "detail_why": self.detail_why,
                "worker_peak_rss_kib": dict(self.worker_peak_rss_kib)}
