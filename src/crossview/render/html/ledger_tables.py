"""Ledger (synthesis) and A/B tables: server-rendered HTML, readable without JavaScript."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from crossview.render.html.esc import code, esc, section, table
from crossview.render.html.inputs import LEDGER_KEYS, Synthesis


def _cell(v: Any) -> str:
    if v is None:
        return '<span class="dim">–</span>'
    if isinstance(v, list):
        return "<br>".join(_cell(x) for x in v) or '<span class="dim">–</span>'
    if isinstance(v, dict):
        if "text" in v:  # a Measurement: its own text carries value and unit
            return esc(v["text"])
        return "; ".join(f"{esc(k)}: {_cell(x)}" for k, x in v.items())
    return re.sub(r"`([^`]+)`", r"<code><bdi>\1</bdi></code>", esc(v))  # Markdown inline code


# columns shown for the synthesis' other lists (keys of synthesis/*.to_dict); rows of any
# other shape fall back to their scalar keys
_COLUMNS = {
    "Contradictions": ("kind", "title", "observation", "meaning", "evidence_artifacts"),
    "Experiments": ("rank", "lever_id", "baseline", "variant", "metric", "trials"),
    "Frontier": ("what", "type", "value", "cost", "test", "evidence_artifacts"),
}


def _items(title: str, rows: list[Any]) -> str:
    if not rows:
        return ""
    if not all(isinstance(r, dict) for r in rows):
        lis = "".join(f"<li>{_cell(r)}</li>" for r in rows)
        return f"<h3>{esc(title)}</h3><ul>{lis}</ul>"
    cols = [c for c in _COLUMNS.get(title, ()) if any(c in r for r in rows)] or [
        k for k in dict.fromkeys(k for r in rows for k in r)
        if all(not isinstance(r.get(k), dict | list) for r in rows)][:8]
    return f"<h3>{esc(title)}</h3>" + table(
        [c.replace("_", " ") for c in cols], [[_cell(r.get(c)) for c in cols] for r in rows])


def ledger_panel(syn: Synthesis) -> str:
    head = [k.replace("_", " ") for k in LEDGER_KEYS]
    rows = [[_cell(r.get(k)) for k in LEDGER_KEYS] for r in syn.ledger]
    body = (table(head, rows, num={0}, cls="ledger") if rows
            else '<p class="dim">The ledger is empty.</p>')
    body += _items("Contradictions", syn.contradictions)
    body += _items("Experiments", syn.experiments)
    body += _items("Frontier", syn.frontier)
    return section("ledger", "Lever ledger (synthesis)", body,
                   f"From {code(syn.path)}. Confidence stays DRAFT until a "
                   "same-node A/B confirms a lever (every VERDICT gate passed).")


def _num(x: Any, unit: str = "") -> str:
    if not isinstance(x, int | float):
        return '<span class="dim">–</span>'
    text = f"{x:.4g}" if abs(x) < 1e4 else f"{x:,.0f}"
    return esc(f"{text} {unit}".strip())


def _arm(a: Any) -> str:
    if not isinstance(a, dict) or a.get("median") is None:
        return '<span class="dim">–</span>'
    spread = a.get("spread_pct")
    sp = f" ± {spread:.1f} %" if isinstance(spread, int | float) else ""
    return _num(a.get("median"), a.get("unit") or "") + esc(sp)


def ab_panel(d: dict[str, Any], path: Path) -> str:
    rows = []
    for m in d["metrics"]:
        ci = m.get("ci")
        ci_text = (f"[{ci[0]:.4f}, {ci[1]:.4f}]" if isinstance(ci, list) and len(ci) == 2
                   and all(isinstance(x, int | float) for x in ci) else "–")
        delta = m.get("delta_pct")
        verdict = str(m.get("verdict") or "–")
        reason = m.get("reason")
        rows.append([
            code(m['metric']), _arm(m.get("baseline")), _arm(m.get("variant")),
            esc(f"{delta:+.2f} %") if isinstance(delta, int | float) else "–", esc(ci_text),
            _num(m.get("p")),
            f'<span class="verdict v-{esc(verdict)}">{esc(verdict)}</span>'
            + (f' <span class="dim">({esc(reason)})</span>' if reason and verdict not in
               ("win", "loss") else "")])
    body = table(["metric", "baseline median ± spread", "variant median ± spread", "delta",
                  "CI (ratio)", "p", "verdict"], rows, num={1, 2, 3, 5})
    for r in d.get("refusals") or []:
        body += f'<p class="bad">refused: {esc(r)}</p>'
    for n in d.get("notes") or []:
        body += f'<p class="note">note: {esc(n)}</p>'
    arms = (f"Baseline: {esc(', '.join(map(str, d.get('baseline') or [])))} · "
            f"Variant: {esc(', '.join(map(str, d.get('variant') or [])))}")
    method = esc(d.get("method") or "")
    return section("ab", "A/B: variant vs baseline", body,
                   f"From {code(path)}. {arms}. {method}")
