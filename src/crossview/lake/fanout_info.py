"""How `analyze --workers/--dask` ran (rank_fanout.py): the record an Analysis carries,
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

    def to_dict(self) -> dict[str, object]:
        return {"engine": self.engine, "rank_files": self.rank_files,
                "detail_rank": self.detail_rank, "detail_path": self.detail_path,
                "detail_why": self.detail_why,
                "worker_peak_rss_kib": dict(self.worker_peak_rss_kib)}
