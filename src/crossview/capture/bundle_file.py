"""bundle.yaml: the Context, how the bundle was made, and facts files cannot say themselves.

Follows the shared bundle convention: top-level `context` (Context field names, plus
`context.extra` for driver/cuda/torch/regime/node), `capture` (tool, command, started, ended,
problems) and `artifacts` (relative path → phase/rank/note). Unknown values are omitted.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from crossview.capture.machine import MachineFacts, version
from crossview.core.context import Context

FILENAME = "bundle.yaml"


def now_iso() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def tool_name() -> str:
    return f"crossview capture {version('crossview') or 'dev'}"


@dataclass
class BundleMeta:
    context: dict[str, Any] = field(default_factory=dict)  # Context field → value
    extra: dict[str, Any] = field(default_factory=dict)  # context.extra
    command: str = ""
    started: str = field(default_factory=now_iso)
    ended: str | None = None
    problems: list[str] = field(default_factory=list)
    artifacts: dict[str, dict[str, Any]] = field(default_factory=dict)

    def set(self, key: str, value: Any) -> None:
        """A Context field, unless unknown (None / empty)."""
        if key not in Context.field_names() and key != "metadata":
            raise KeyError(f"not a Context field: {key}")
        if value not in (None, "", [], {}):
            self.context[key] = value

    def note(self, problem: str) -> None:
        if problem not in self.problems:
            self.problems.append(problem)

    def add_machine(self, m: MachineFacts) -> None:
        self.set("hostname", m.hostname)
        if m.gpus:
            names = sorted({g.name for g in m.gpus if g.name})
            self.set("gpu", names[0] if len(names) == 1 else ", ".join(names))
            self.set("gpu_count", len(m.gpus))
            self.set("gpu_uuids", [g.uuid for g in m.gpus if g.uuid])
        else:
            self.set("gpu_count", 0)
        if m.driver:
            self.extra["driver"] = m.driver
        if m.cuda_driver:
            self.extra["cuda_driver"] = m.cuda_driver  # highest CUDA the driver supports
        for p in m.problems:
            self.note(p)

    def to_dict(self) -> dict[str, Any]:
        ctx = dict(self.context)
        if self.extra:
            ctx["extra"] = dict(self.extra)
        cap: dict[str, Any] = {"tool": tool_name(), "command": self.command,
                               "started": self.started, "ended": self.ended or now_iso(),
                               "problems": list(self.problems)}
        out: dict[str, Any] = {"context": ctx, "capture": cap}
        if self.artifacts:
            out["artifacts"] = self.artifacts
        return out

    def write(self, bundle: Path) -> Path:
        path = Path(bundle) / FILENAME
        path.write_text(yaml.safe_dump(self.to_dict(), sort_keys=False, allow_unicode=True),
                        encoding="utf-8")
        return path
