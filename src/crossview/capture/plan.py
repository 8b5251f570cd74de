"""`crossview capture plan`: the coordinated capture a full synthesis needs, as shell commands
(render_sh) or Kubernetes Jobs (plan_k8s.py). Templates: knowledge/capture_plan.yaml."""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any

from crossview.errors import UsageError
from crossview.knowledge.loader import load_yaml


@dataclass(frozen=True)
class Sidecar:
    id: str
    title: str
    why: str
    command: str


@dataclass
class Phase:
    id: str
    title: str
    why: str
    env: dict[str, str]
    server: str  # the full server command, profiler wrapper included
    health: str
    client: str
    sidecars: list[Sidecar] = field(default_factory=list)
    post: list[str] = field(default_factory=list)


@dataclass
class Plan:
    engine: str
    params: dict[str, Any]
    phases: list[Phase]


def engines() -> list[str]:
    return sorted(load_yaml("capture_plan.yaml"))


def _fill(text: str, params: dict[str, Any]) -> str:
    try:
        return " ".join(text.format(**params).split())
    except KeyError as e:
        raise UsageError(f"capture plan template needs {e.args[0]!r}") from None


def build(engine: str, overrides: dict[str, Any]) -> Plan:
    table = load_yaml("capture_plan.yaml")
    if engine not in table:
        raise UsageError(f"--engine {engine!r}: no capture plan (known: {', '.join(engines())})")
    spec = table[engine]
    params = dict(spec["defaults"])
    params.update({k: v for k, v in overrides.items() if v is not None})
    phases = []
    for ph in spec["phases"]:
        p = dict(params, phase=ph["id"])
        p["server"] = _fill(spec["server"], p)
        p["bench"] = _fill(spec["bench"], p)
        p["bench_small"] = _fill(spec["bench_small"], p)
        wrap = _fill(ph.get("server_wrap") or "", p)
        phases.append(Phase(
            ph["id"], ph["title"], " ".join(ph["why"].split()),
            {k: _fill(v, p) for k, v in (ph.get("server_env") or {}).items()},
            f"{wrap} {p['server']}".strip(), _fill(spec["health"], p), _fill(ph["client"], p),
            [Sidecar(s["id"], s["title"], " ".join(s["why"].split()), _fill(s["command"], p))
             for s in ph.get("sidecars") or []],
            [_fill(c, p) for c in ph.get("post") or []]))
    return Plan(engine, params, phases)


def server_script(ph: Phase, out: str) -> str:
    """Start the server, run until the client marks the phase done, stop it (SIGINT lets a
    profiler wrapper write its report)."""
    env = " ".join(f"{k}={shlex.quote(v)}" for k, v in ph.env.items())
    return (f"mkdir -p {out}/logs {out}/{ph.id} && {env + ' ' if env else ''}{ph.server} "
            f"> {out}/logs/{ph.id}-server.log 2>&1 & SERVER=$!; "
            f"until [ -f {out}/{ph.id}.done ]; do sleep 5; done; "
            "kill -INT $SERVER; wait $SERVER || true")


def client_script(ph: Phase, out: str) -> str:
    side = "".join(f"( {s.command} ) & SIDE_{s.id}=$!; " for s in ph.sidecars)
    kill = "".join(f"kill $SIDE_{s.id}; " for s in ph.sidecars)
    post = "".join(f"{c}; " for c in ph.post)
    return (f"until {ph.health}; do sleep 5; done; {side}{ph.client}; {kill}"
            f"touch {out}/{ph.id}.done; {post}").rstrip("; ")


def render_sh(plan: Plan) -> str:
    out = plan.params["out"]
    lines = ["#!/usr/bin/env bash",
             f"# crossview capture plan --engine {plan.engine}: the phases run one after the "
             "other on one node;",
             "# afterwards: crossview analyze " + " ".join(f"{out}/{ph.id}" for ph in plan.phases),
             "set -uo pipefail", ""]
    for ph in plan.phases:
        lines += [f"# ({ph.id}) {ph.title}", f"#     {ph.why}",
                  f"rm -f {out}/{ph.id}.done",
                  f"( {server_script(ph, out)} ) &", f"SERVER_{ph.id}=$!",
                  f"until {ph.health}; do sleep 5; done"]
        for s in ph.sidecars:
            lines += [f"# ({s.id}) {s.title}, over phase {ph.id}'s bench window",
                      f"#     {s.why}", f"( {s.command} ) &", f"SIDE_{s.id}=$!"]
        lines.append(ph.client)
        lines += [f"kill $SIDE_{s.id}" for s in ph.sidecars]
        lines += [f"touch {out}/{ph.id}.done", f"wait $SERVER_{ph.id} || true", *ph.post, ""]
    return "\n".join(lines)
