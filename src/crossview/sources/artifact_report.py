"""What a reader reports about one artifact."""

from __future__ import annotations

from dataclasses import dataclass, field

from crossview.store.store import Store

# statuses whose data is in the store and analyzed (partial: with a warning, and not a valid
# synthesis source); and those that are not a rejection (no error line, no exit 2)
USABLE = ("ok", "partial")
NOT_REJECTED = ("ok", "partial", "skipped")


@dataclass
class ArtifactReport:
    path: str
    kind: str
    # ok | partial (read, but cut short or damaged: the problems say what) | skipped (a
    # folder walk's file no reader recognizes) | empty | invalid | unsupported | refused
    status: str
    problems: list[str] = field(default_factory=list)
    artifact_id: int | None = None
    # what the capture did not collect / left out (e.g. nsys: "NVTX not collected"): the
    # artifact is still ok; these qualify what its numbers cover
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        d: dict[str, object] = {"path": self.path, "kind": self.kind, "status": self.status,
                                "problems": list(self.problems)}
        if self.notes:
            d["notes"] = list(self.notes)
        return d


def stored(store: Store) -> list[ArtifactReport]:
    """The reports a store holds (its artifacts rows), by artifact id: what `analyze` reports
    of a store it did not read itself (a lake)."""
    rows = store.sql("SELECT path, kind, status, problems, artifact_id, notes FROM artifacts "
                     "ORDER BY artifact_id").fetchall()
    return [ArtifactReport(p, k, s or "ok", list(pr or []), a, list(n or []))
            for p, k, s, pr, a, n in rows]
