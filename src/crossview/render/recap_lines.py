"""Sentences of the recap header, from view data: what one input holds (ArtifactInfo) and
how `analyze --workers/--dask` ran (FanoutInfo). Markdown and HTML share them."""

from __future__ import annotations

from crossview.lake.fanout_info import FanoutInfo
from crossview.views.views import ArtifactInfo


def artifact_line(a: ArtifactInfo) -> str:
    parts = [f"{a.events:,} {a.what}"]
    if a.rank is not None:
        parts.append(f"rank {a.rank} of {a.world_size} ({a.backend or '?'})")
    if a.devices:
        parts.append("GPU " + ", ".join(a.devices))
    return "; ".join(parts)


def fanout_line(f: FanoutInfo) -> str:
    peak = max(f.worker_peak_rss_kib.values(), default=0) / 1024
    return (f"{f.rank_files} input files summarized one per task on {f.engine} "
            f"(peak RSS {peak:.0f} MiB per worker); the rank table and stragglers cover "
            f"every rank, the metrics, GPU/CPU views and other findings describe rank "
            f"{f.detail_rank} (`{f.detail_path}`, {f.detail_why}) and any "
            "non-rank inputs")
