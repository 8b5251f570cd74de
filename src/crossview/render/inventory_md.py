"""`crossview inventory` as Markdown (JSON is Inventory.to_dict)."""

from __future__ import annotations

from crossview.core import inert
from crossview.synthesis.inventory import Inventory


def _cell(text: str) -> str:
    return inert.name(text).replace("|", "\\|")  # a name is data: one line


def context_lines(inv: Inventory) -> list[str]:
    b = inv.bundle
    known = b.context.known()
    from_files = any(v != "bundle.yaml" for v in b.context_sources.values())
    lines = ["**Context** (bundle.yaml" + ("" if b.has_yaml else (
                 ": absent — read from the bundle's files" if from_files
                 else ": absent — every field unknown")) + "): "
             + (", ".join(f"{k} {v}" for k, v in known.items()) or "nothing recorded")]
    if b.extra:
        lines.append("extra: " + ", ".join(f"{k} {v}" for k, v in sorted(b.extra.items())))
    lines.append("unknown: " + (", ".join(b.unknowns()) or "none"))
    srcs = {k: v for k, v in b.context_sources.items() if v != "bundle.yaml"}
    if srcs:
        lines.append("read from the bundle's files: " + "; ".join(
            f"{k} ← {v}" for k, v in sorted(srcs.items())))
    return [" ".join(lines[:1]), *[f"- {x}" for x in lines[1:]]]


def render(inv: Inventory) -> str:
    b = inv.bundle
    out = [f"# Evidence bundle `{b.root}` — inventory", "", *context_lines(inv), ""]
    if b.capture:
        out += ["**Capture**: " + "; ".join(f"{k} {b.capture[k]}" for k in sorted(b.capture)),
                ""]
    if inv.gpu_named:
        out += [f"GPU of captures that do not name one: {inv.gpu_named}.", ""]
    out += ["| artifact | kind | source | tier | phase | holds | capture validation |",
            "|---|---|---|---|---|---|---|"]
    for e in inv.entries:
        check = "valid" if e.valid else "; ".join(
            f"**{p.problem}**: {p.detail} — fix: {p.fix}" for p in e.problems)
        phase = f"{e.phase} ({e.phase_from})" if e.phase else "unknown"
        out.append(f"| `{e.path}` | {e.kind} | {e.source} | {e.tier} | {phase} | "
                   f"{_cell(e.what)} | {_cell(check)} |")
    srcs = inv.sources()
    out += ["", f"**Valid distinct sources**: {len(srcs)} — "
            + ("; ".join(f"{s}: {len(a)} file(s)" for s, a in srcs.items()) or "none")
            + f". Rigor tiers supplied: {', '.join(inv.tiers()) or 'none'}."
            + (" Synthesis needs 2." if len(srcs) < 2 else "")]
    aside = sorted({e.source for e in inv.valid() if not e.counts and e.source not in srcs})
    if aside:  # valid but not a profiler view of the GPU (host samples, bench results)
        out[-1] += (f" Also valid, corroborating only (not counted): {', '.join(aside)}.")
    if inv.other_files:
        out += ["", "Not read (not a format crossview reads): "
                + ", ".join(f"`{p}`" for p in inv.other_files)]
    for w in b.warnings:
        out += ["", f"warning: {w}"]
    return "\n".join(out) + "\n"
