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

    def to_dict(self) -> dict[str, object]:
        return {"path": self.path, "kind": self.kind, "status": self.status,
                "problems": list(self.problems)}
