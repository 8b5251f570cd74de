"""How each view tool's result is cut at `detail="summary"`: the levels `compact.fit` tries
in turn, and the reasons a field is absent (null with a reason, never a 0)."""

from __future__ import annotations

from typing import Any

from crossview.mcp.compact import NAME_CHARS, clip

TIMELINE_ABSENT = ("no GPU timeline in this input (no kernel events): busy, idle and "
                   "launches need a Kineto or nsys trace")
SUMMARY_ONLY = ("nsys stats summaries only: kernel totals per name, no timeline, so busy, "
                "idle and launches are not measured")
COUNTERS_ABSENT = ("no hardware counters, serving or benchmark metrics in this input "
                   "(DCGM, NVML, nvidia-smi, engine /metrics, bench results)")


def metrics_absent(m: dict[str, Any]) -> dict[str, str]:
    """{field: reason} for the metrics block when the input cannot give it."""
    if m.get("kernel_count"):
        return {}
    if m.get("summary_only"):
        return {"metrics": SUMMARY_ONLY}
    if m.get("cpu_only") or m.get("host_time_ns") or m.get("cpu_samples"):
        return {"metrics": TIMELINE_ABSENT + " (host events only)"}
    return {"metrics": TIMELINE_ABSENT}


def counters_absent(g: dict[str, Any]) -> dict[str, str]:
    keys = ("devices", "serving", "bench", "host_cpu")
    return {} if any(g.get(k) for k in keys) else {"gpu_metrics": COUNTERS_ABSENT}


def slim_metrics(m: dict[str, Any], rows: int) -> dict[str, Any]:
    out = dict(m)
    for k in ("idle_by_stream", "copies", "sync_apis", "devices"):
        if isinstance(out.get(k), list):
            out[k] = out[k][:rows]
    return out


def slim_kernels(rows: list[dict[str, Any]], n: int, name_chars: int = NAME_CHARS
                 ) -> list[dict[str, Any]]:
    out = []
    for r in rows[:n]:
        r = dict(r)
        for k in ("name", "kernel", "frame"):
            if isinstance(r.get(k), str):
                r[k] = clip(r[k], name_chars)
        out.append(r)
    return out


def slim_counters(g: dict[str, Any], stats: bool) -> dict[str, Any]:
    """Per device: name, sources, samples and (stats) each metric's unit/mean/max/n."""
    out = dict(g)
    devs = []
    for d in g.get("devices", []):
        st = d.get("stats") or {}
        d = {k: v for k, v in d.items() if k != "stats"}
        if stats:
            d["stats"] = {name: {k: s.get(k) for k in ("unit", "mean", "max", "n")}
                          for name, s in st.items()}
        devs.append(d)
    out["devices"] = devs
    return out


def clip_tree(node: Any, n: int = NAME_CHARS) -> Any:
    """Cut long frame names (and `via` frames) in a pruned tree, in place."""
    if isinstance(node, dict):
        if isinstance(node.get("frame"), str):
            node["frame"] = clip(node["frame"], n)
        if isinstance(node.get("via"), list):
            node["via"] = [clip(x, n) for x in node["via"]]
        for k in ("roots", "children"):
            for c in node.get(k, []):
                clip_tree(c, n)
    return node


def slim_finding(f: dict[str, Any], text_chars: int) -> dict[str, Any]:
    keep = ("pattern", "severity", "title", "share", "rigor", "confidence", "observation",
            "fix", "expected_effect")
    return {k: clip(f[k], text_chars) if isinstance(f.get(k), str) else f.get(k)
            for k in keep}


def slim_artifacts(arts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    keep = ("path", "kind", "status", "events", "what", "rank", "devices", "problems")
    return [{k: a.get(k) for k in keep} for a in arts]
