"""What a reader reports about one artifact."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ArtifactReport:
    path: str
    kind: str
    status: str  # ok | empty | invalid | unsupported
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
