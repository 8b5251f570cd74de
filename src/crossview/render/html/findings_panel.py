"""The findings panel, right after the metrics: each RED / YELLOW finding with its fix, the
evidence and the expected effect. Severity is a coloured badge with its word, so it reads
without an emoji font. The findings are the detectors' own; this module only formats."""

from __future__ import annotations

from crossview.analysis import Analysis
from crossview.core.finding import Finding
from crossview.render.html.esc import esc, section
from crossview.render.html.recap import inline_html, to_html

LABEL = {"red": "RED", "yellow": "YELLOW"}


def badge(severity: str) -> str:
    word = LABEL.get(severity, severity.upper())
    return f'<span class="badge {esc(severity)}">{esc(word)}</span>'


def _one(i: int, f: Finding) -> str:
    effect = (f'<p class="effect"><b>Expected effect:</b> {inline_html(f.expected_effect)}</p>'
              if f.expected_effect else "")
    evidence = "; ".join(str(e) for e in f.evidence)
    return (f'<article class="finding {esc(f.severity)}">'
            f"<h3>{badge(f.severity)} {i}. {inline_html(f.title)}</h3>"
            f'<div class="obs">{to_html(f.observation)}</div>'
            f'<div class="fix">{to_html("**Fix:** " + f.fix)}</div>{effect}'
            f'<p class="ev">Evidence: {esc(evidence)} · {esc(f.rigor)} · '
            f"{esc(f.confidence)} · <code>{esc(f.pattern)}</code></p></article>")


def findings_panel(a: Analysis) -> str:
    shown = [f for f in a.findings if f.severity == "red"] + [
        f for f in a.findings if f.severity == "yellow"]
    body = "".join(_one(i, f) for i, f in enumerate(shown, 1)) or (
        '<p class="dim">No RED or YELLOW finding in this input: nothing crossed the '
        "thresholds of <code>knowledge/thresholds.yaml</code>. Notes are in the recap.</p>")
    others = len(a.findings) - len(shown)
    note = ("Ranked by share of the filtered time; each with the change to make and where."
            + (f" {others} more (notes) in the recap and the JSON." if others else ""))
    return section("findings", "Findings", body, note)
