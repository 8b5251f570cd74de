"""Summary-only evidence (nsys stats CSV reports) and per-artifact capture notes, in scope.

Summary rows are totals per name with no timeline: they are shown as such and never feed the
timeline metrics or detectors. Values keep nsys's units (ns; MB for size reports).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from crossview.store.store import Store

SUMMARY_LABEL = "summary-only (nsys stats CSV, no timeline)"


@dataclass
class SummaryRow:
    name: str
    category: str | None
    time_pct: float | None  # share of the listed rows, as nsys printed it
    total: float | None
    count: int | None
    avg: float | None
    med: float | None
    min: float | None
    max: float | None
    stddev: float | None


@dataclass
class SummaryReport:
    artifact: str
    report: str  # cuda_gpu_kern_sum, cuda_api_sum, …
    unit: str  # ns | MB
    row_count: int
    total: float  # sum of the listed totals
    rows: list[SummaryRow] = field(default_factory=list)  # the largest, by total
    evidence: str = SUMMARY_LABEL

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def summaries(store: Store, artifacts: tuple[str, ...], limit: int = 10) -> list[SummaryReport]:
    heads = store.sql(
        "SELECT a.path, s.report, any_value(s.unit), count(*), coalesce(sum(s.total), 0),"
        " a.artifact_id FROM summary_stats s JOIN artifacts a USING (artifact_id)"
        " WHERE a.status = 'ok' AND a.path IN (SELECT unnest($p)) GROUP BY ALL ORDER BY 1, 2",
        {"p": list(artifacts)}).fetchall()
    out: list[SummaryReport] = []
    for path, report, unit, n, total, aid in heads:
        rows = store.sql(
            "SELECT name, category, time_pct, total, count, avg, med, min, max, stddev"
            " FROM summary_stats WHERE artifact_id = $a AND report = $r"
            f" ORDER BY total DESC NULLS LAST, name LIMIT {int(limit)}",
            {"a": aid, "r": report}).fetchall()
        out.append(SummaryReport(path, report, unit, int(n), float(total),
                                 [SummaryRow(*r) for r in rows]))
    return out


def kernel_summary(store: Store, artifact_id: int) -> list[SummaryRow]:
    """One file's `cuda_gpu_kern_sum` rows (every kernel name nsys listed), as stored."""
    return [SummaryRow(*r) for r in store.sql(
        "SELECT name, category, time_pct, total, count, avg, med, min, max, stddev"
        " FROM summary_stats WHERE artifact_id = $a AND report = 'cuda_gpu_kern_sum'",
        {"a": artifact_id}).fetchall()]


def artifact_notes(store: Store, artifacts: tuple[str, ...]) -> dict[str, list[str]]:
    """What each capture did not collect or left out (nsys: absent tables)."""
    return {p: list(n) for p, n in store.sql(
        "SELECT path, notes FROM artifacts WHERE status = 'ok' AND len(notes) > 0"
        " AND path IN (SELECT unnest($p)) ORDER BY path", {"p": list(artifacts)}).fetchall()}
