"""The ranks panel of a multi-rank job: one lane per rank over the job's step — each collective
drawn as its wait for the last rank then its transfer — with the cross-rank critical path
drawn across the lanes it runs through, and a table of the same numbers. Server-rendered SVG
(no script needed). Numbers come from views/distributed (rank_comm, late_ranks, rank_path)."""

from __future__ import annotations

from crossview.render.html.esc import esc, section, table
from crossview.units import duration
from crossview.views.distributed.crossrank import RankAnalysis

W, LABEL, LANE, GAP = 1000.0, 64.0, 18.0, 6.0  # SVG units
WAIT_FILL, XFER_FILL, PATH_STROKE = "#f0a040", "#3f7fd0", "#d0302a"


def _span(job: RankAnalysis) -> tuple[int, int] | None:
    p = job.replayed().critical_path
    if p is not None:
        return p.start_ns, p.end_ns
    ts = [(c.start_ns + job.offsets_ns.get(r, 0), c.end_ns + job.offsets_ns.get(r, 0))
          for r, rc in job.comm.items() for c in rc.calls]
    return (min(a for a, _ in ts), max(b for _, b in ts)) if ts else None


def ranks_panel(job: RankAnalysis) -> str:
    span = _span(job)
    if span is None:
        return ""
    lo, hi = span
    scale = (W - LABEL) / max(hi - lo, 1)
    order = sorted(r.rank for r in job.ranks)
    y = {r: GAP + i * (LANE + GAP) for i, r in enumerate(order)}

    def x(ns: int) -> float:
        return LABEL + (min(max(ns, lo), hi) - lo) * scale

    parts = []
    for r in order:
        parts.append(f'<text x="2" y="{y[r] + LANE * 0.7:.1f}" font-size="11">rank {r}</text>'
                     f'<rect x="{LABEL}" y="{y[r]:.1f}" width="{W - LABEL}" height="{LANE}" '
                     'fill="#f4f4f4"/>')
        off = job.offsets_ns.get(r, 0)
        for c in job.comm[r].calls if r in job.comm else []:
            s, m, e = c.start_ns + off, c.start_ns + c.wait_ns + off, c.end_ns + off
            if e < lo or s > hi:
                continue
            if m > s:
                parts.append(f'<rect x="{x(s):.2f}" y="{y[r]:.1f}" width="{x(m) - x(s):.2f}" '
                             f'height="{LANE}" fill="{WAIT_FILL}"><title>wait '
                             f"{esc(duration(c.wait_ns))}</title></rect>")
            parts.append(f'<rect x="{x(m):.2f}" y="{y[r]:.1f}" '
                         f'width="{max(x(e) - x(m), 0.3):.2f}" height="{LANE}" '
                         f'fill="{XFER_FILL}"><title>transfer '
                         f"{esc(duration(c.transfer_ns))}</title></rect>")
    p = job.replayed().critical_path
    prev = None
    for run in p.runs() if p is not None else []:
        if run.rank not in y:
            continue
        mid = y[run.rank] + LANE / 2
        if prev is not None:
            parts.append(f'<line x1="{x(run.start_ns):.2f}" y1="{prev:.1f}" '
                         f'x2="{x(run.start_ns):.2f}" y2="{mid:.1f}" stroke="{PATH_STROKE}" '
                         'stroke-width="1.5"/>')
        top = ", ".join(f"{o} {duration(n)}" for o, n in run.top)
        parts.append(f'<line x1="{x(run.start_ns):.2f}" y1="{mid:.1f}" '
                     f'x2="{max(x(run.end_ns), x(run.start_ns) + 0.5):.2f}" y2="{mid:.1f}" '
                     f'stroke="{PATH_STROKE}" stroke-width="4"><title>critical path on rank '
                     f"{run.rank}: {esc(duration(run.end_ns - run.start_ns))} ({esc(top)})"
                     "</title></line>")
        prev = mid
    height = GAP + len(order) * (LANE + GAP)
    svg = (f'<svg class="ranks-lanes" viewBox="0 0 {W:.0f} {height:.0f}" width="100%" '
           f'role="img" aria-label="one lane per rank with the critical path">{"".join(parts)}'
           "</svg>")
    legend = (f'<div class="legend"><span class="lg"><span class="sw" style="background:'
              f'{WAIT_FILL}"></span>collective: waiting for the last rank</span>'
              f'<span class="lg"><span class="sw" style="background:{XFER_FILL}"></span>'
              f'collective: transfer</span><span class="lg"><span class="sw" style="background:'
              f'{PATH_STROKE}"></span>cross-rank critical path</span></div>')
    return section("ranks", "Ranks", svg + legend + _table(job), _note(job))


def _table(job: RankAnalysis) -> str:
    late = {r.rank: r for r in job.late.ranks} if job.late is not None else {}
    p = job.replayed().critical_path
    on_path = dict(p.by_rank()) if p is not None else {}
    rows = []
    for r in sorted(job.ranks, key=lambda r: r.rank):
        c = job.comm.get(r.rank)
        lr = late.get(r.rank)
        rows.append([esc(r.rank), esc(duration(c.wait_ns) if c else "–"),
                     esc(duration(c.transfer_ns) if c else "–"),
                     esc(f"{lr.last:,}" if lr else "0"),
                     esc(f"{duration(lr.group_wait_ns)} ({lr.share:.1%})" if lr else "–"),
                     esc(duration(on_path[r.rank]) if r.rank in on_path else "–")])
    return table(["rank", "waiting for a peer", "transfer", "last at",
                  "the group waited for it", "on the critical path"], rows,
                 num={0, 1, 2, 3, 4, 5})


def _note(job: RankAnalysis) -> str:
    p = job.replayed().critical_path
    what = (f"The job step {esc(p.step)}: the slowest rank's, rank {p.ends_on} "
            f"({esc(duration(p.end_ns - p.start_ns))}); the red line is its critical path, "
            "walked back through the ranks' replay graphs joined at their collectives."
            if p is not None else esc(job.critical_path_note or "No critical path."))
    return f"{what} Clock: {esc(job.clock_note)}."
