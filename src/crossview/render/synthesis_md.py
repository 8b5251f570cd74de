"""The synthesis as Markdown: sources, reconciliation, contradictions, ledger, experiments,
frontier — every number with its unit and the artifact it came from."""

from __future__ import annotations

from crossview.core import inert
from crossview.core.measurement import Measurement
from crossview.render.inventory_md import context_lines
from crossview.synthesis.reconcile import NOT_IN_BUNDLE
from crossview.synthesis.synthesize import Synthesis

# ncu's tensor-core verdict as a reader sees it (None: the counters were not collected)
_ON_OFF = {True: "on", False: "off", None: "unknown"}


def _c(text: object) -> str:
    return inert.name(text).replace("|", "\\|")  # a name is data: one line


def _m(x: Measurement | None, why: str = NOT_IN_BUNDLE) -> str:
    return x.text() if x else why


def _sources(s: Synthesis) -> list[str]:
    out = ["## Sources", "", "| source | tier | artifacts | phase |", "|---|---|---|---|"]
    for e in s.inv.entries:
        state = "" if e.valid else " ⚠ " + "; ".join(p.problem for p in e.problems)
        out.append(f"| {e.source} | {e.tier} | `{e.path}`{state} | {e.phase or 'unknown'} |")
    for p in s.inv.bundle.capture.get("problems") or []:
        out.append(f"\n⚠ capture problem recorded in bundle.yaml: {p}")
    bad = [e for e in s.inv.entries if e.problems]
    for e in bad:
        for p in e.problems:
            out.append(f"\n⚠ capture problem `{e.path}` — {p.problem}: {p.detail}. "
                       f"Fix: {p.fix}")
    return out


def _reconciliation(s: Synthesis) -> list[str]:
    r = s.rec
    out = ["## Reconciliation per phase and kernel family", "",
           f"{r.l1_note}. L3 (workload level): "
           + ("; ".join(f"{v} [`{a}`]" for a, v in r.l3) or f"{NOT_IN_BUNDLE} (no GPU "
              "counters: bytes- vs compute-bound at workload level unknown)") + "."
           + "".join(f" L3 host: {v} [`{a}`]." for a, v in r.l3_host), ""]
    for (phase, art), total in sorted(r.phase_totals.items(),
                                      key=lambda x: ({"decode": 0, "prefill": 1}
                                                     .get(x[0][0], 2), x[0][1])):
        rows = [f for f in r.families if f.artifact == art][:8]
        out += [f"### {phase} — `{art}` ({total.text()} of kernel time)", "",
                "| family | L2 time | L2 share | launches | top kernel | L1 share | "
                "GPU idle before | in CUDA graph | L4 dominant kernel: % of roofline, "
                "tensor cores |", "|---|---:|---:|---:|---|---:|---:|---:|---|"]
        for f in rows:
            l4 = "—"
            if f.l4:
                pr = f.l4.pct_roofline()
                tc = _ON_OFF[f.l4.ncu.tensor_cores]
                l4 = (f"`{f.l4.kernel}`: {pr.text() if pr else 'unknown'} "
                      f"({f.l4.ncu.bound}), tensor cores {tc}")
            gap = _m(f.host_gap, "not in bundle (summary only)")
            graph = _m(f.in_graph, "not in bundle (summary only)")
            l1 = _m(f.l1_share, "—")
            out.append(f"| {f.family} | {f.time.text()} | {f.share.text()} | {f.count:,} | "
                       f"`{_c(f.top_kernel)}` | {l1} | {gap} | {graph} | {_c(l4)} |")
        out.append("")
    if r.joins:
        out += ["### Kernel identity join (ncu launch ↔ trace rows of the same kernel)", "",
                "| kernel | family | match | trace (phase, share, launches, median) | ncu "
                "duration | ncu ÷ trace | % of roofline (ncu) | bound | tensor cores |",
                "|---|---|---|---|---:|---:|---:|---|---|"]
        for j in r.joins:
            t = j.trace
            tr = (f"{t.phase}: {t.share.text()}, {t.count:,} launches, {_m(t.med or t.avg)} "
                  f"[`{t.artifact}`]" if t else "no trace row")
            pr = j.pct_roofline()
            ratio = j.ratio.text() if j.ratio else (
                "refused (mixed shapes in the trace row)" if j.mixed else
                f"refused ({j.duration_cmp.reason()})" if j.duration_cmp else "—")
            out.append(f"| `{_c(j.kernel)}` | {j.family} | {j.match} | {_c(tr)} | "
                       f"{_m(j.ncu_duration)} [`{j.ncu_artifacts[0]}`] | {_c(ratio)} | "
                       f"{pr.text() if pr else 'unknown'} | {j.ncu.bound} | "
                       f"{_ON_OFF[j.ncu.tensor_cores]} |")
        out.append("")
    return out


def _contradictions(s: Synthesis) -> list[str]:
    out = ["## Contradictions between sources", ""]
    if not s.contradictions:
        return out + ["None found between the sources of this bundle.", ""]
    for i, c in enumerate(s.contradictions, 1):
        out.append(f"{i}. **{c.title}** (`{c.kind}`) — {c.observation}. → {c.meaning}."
                   + (f" Comparison refused: {c.refused}." if c.refused else ""))
    return out + [""]


def _pct(x: object) -> str:
    return f"{x:+.1f}%" if isinstance(x, (int, float)) else "n/a"


def _ledger(s: Synthesis) -> list[str]:
    out = ["## Ledger (ranked by predicted saving, then upper bounds, then levers with no "
           "prediction)", "",
           "| rank | lever | type | expected effect | evidence | source refs | rigor | "
           "confidence |", "|---:|---|---|---|---|---|---|---|"]
    for lv in s.levers:
        refs = ("; ".join(f"{r.repository}@{r.commit} {r.file} ({r.delivery})"
                          for r in lv.source_refs) or
                ("n/a (config)" if lv.type == "config" else "**missing → non-actionable**"))
        out.append(f"| {lv.rank} | {_c(lv.lever)} (`{lv.id}`) | {lv.type} | "
                   f"{_c(lv.measured_effect() or lv.expected_effect())} | "
                   + ", ".join(f"`{a}`" for a in lv.evidence_artifacts)
                   + f" | {_c(refs)} | {lv.sol_rigor} | {lv.confidence} |")
    out.append("")
    for lv in s.levers:
        out.append(f"- `{lv.id}` — basis: {lv.basis}.")
        if lv.rubric:
            b, c = lv.rubric["baseline"], lv.rubric["candidate"]
            out.append(f"  - rubric baseline {b['name']}: K {b['K']}, R {b['R']}, H {b['H']}, "
                       f"P {b['P']}, A {b['A']}; candidate: K {c['K']}, R {c['R']}, "
                       f"H {c['H']}, P {c['P']}, A {c['A']}")
        if lv.ab:
            out.append(f"  - A/B: {lv.ab.get('verdict')} ({lv.ab.get('reason')})")
            failed = lv.ab.get("failed_gates")
            for g in failed if isinstance(failed, list) else []:
                out.append(f"    - failed gate {g}")
        for pc in lv.prediction_check():
            meas, pred, err = pc["measured_pct"], pc["predicted_pct"], pc["error_pts"]
            out.append(f"  - {pc['metric']}: measured {_pct(meas)}, predicted {_pct(pred)}"
                       + (f", error {err:+.1f} pts" if err is not None else ""))
    return out + [""]


def _experiments(s: Synthesis) -> list[str]:
    out = ["## Experiment plan (top levers)", ""]
    for p in s.plans:
        out += [f"### #{p.rank} `{p.lever_id}`", "",
                f"- baseline arm: {p.baseline}", f"- variant arm: {p.variant}",
                f"- the only difference: {p.diff}",
                f"- measure: `{p.metric}` — {p.metric_why}; {p.trials} trials per arm",
                *[f"- note: {n}" for n in p.notes], "", "```sh", *p.commands, p.record,
                "```", ""]
        if p.command_diff:
            out += [f"Command line, baseline (-) vs variant (+), from `{p.command_source}`:",
                    "", "```diff", *p.command_diff, "```", ""]
    return out


def _frontier(s: Synthesis) -> list[str]:
    out = ["## Next-lever frontier (value × cost)", ""]
    if s.wall:
        return out + [s.wall, ""]
    out += ["| # | candidate | type | expected unlock | cost | test that proves/refutes it |",
            "|---:|---|---|---|---:|---|"]
    for i, c in enumerate(s.frontier, 1):
        out.append(f"| {i} | {_c(c.what)} | {c.type} | {_c(c.value)} | {c.cost} | "
                   f"{_c(c.test)} |")
    return out + [""]


def _bottom_line(s: Synthesis) -> list[str]:
    out = ["## Bottom line", ""]
    for lv in s.levers[:3]:
        act = "" if lv.actionable else " — non-actionable until source_refs are given"
        out.append(f"- #{lv.rank} {lv.lever}: {lv.expected_effect()} [{lv.sol_rigor}, "
                   f"{lv.confidence}]{act}")
    if s.contradictions:
        out.append(f"- {len(s.contradictions)} contradiction(s) between sources, listed "
                   "below — read them before the ledger")
    missing = [t for t in ("L1", "L2", "L3", "L4") if t not in s.inv.tiers()]
    if missing:
        out.append(f"- tiers not in the bundle: {', '.join(missing)} (frontier says what "
                   "each would unlock)")
    return out + [""]


def render(s: Synthesis) -> str:
    inv = s.inv
    out = [f"# Synthesis — {inv.bundle.context.model or 'unknown model'} on "
           f"{inv.bundle.context.hardware or inv.bundle.context.gpu or 'unknown GPU'}", "",
           f"Generated {s.stamp} from `{inv.bundle.root}`. All levers are **DRAFT** "
           "(predicted from profiles) until an A/B proves them. Times are kernel time in the "
           "named artifact's window; shares are of that window.", "", *context_lines(inv), ""]
    out += _bottom_line(s)
    out += _sources(s) + [""] + _reconciliation(s) + _contradictions(s) + _ledger(s)
    out += _experiments(s) + _frontier(s)
    if s.kept:
        out.append("Kept from an earlier synthesis (A/B outcome): " + ", ".join(
            f"`{k}`" for k in s.kept))
    for w in inv.bundle.warnings:
        out.append(f"warning: {w}")
    return "\n".join(out).rstrip() + "\n"
