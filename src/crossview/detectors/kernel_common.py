"""Shared by the per-kernel roofline detectors (ncu, rigor L4): weights, evidence, wording.

A profiled kernel is weighed by its share of the workload's kernel time when the bundle has
one: a GPU timeline (Kineto, nsys export), else an nsys kernel summary (`cuda_gpu_kern_sum`,
the one listing the most time: a whole-run summary beside per-stage ones), matched by
instantiation (kernels/match.py signature). Otherwise by its share of the time of the kernels
profiled on the same GPU (ncu serializes and replays each launch, so a per-kernel capture has no
timeline of its own; captures of different GPUs in one bundle are different workloads and are
not summed) — two profiled kernels then rank by their single launches, not by the run.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from msgspec import Struct

from crossview.core.claim import Cite, Claim, Cutoff, Facts, FixPart, Owns, Share, Tier
from crossview.detectors.common import crossed, short
from crossview.kernels.match import signature
from crossview.sol.roofline import KernelRoofline
from crossview.units import bandwidth, duration, flop_rate, size
from crossview.views.device import kernel_names
from crossview.views.views import Views

MAX_NAMED = 3  # kernels named in one claim's observation


class Weighed(Struct, frozen=True, kw_only=True):
    """A profiled kernel with its weights (the phrasing's `head` reads them)."""

    kernel: KernelRoofline
    weight: Share  # its own weight, alone (weigh)
    profiled_share: Share  # of the kernel time profiled on its GPU
    timeline_share: Share | None = None  # of the timeline's kernel time (None: no timeline)
    listed_share: Share | None = None  # of the kernel time an nsys summary lists
    listed_in: str | None = None  # that summary's file name


class KernelFacts(Facts, frozen=True, kw_only=True):
    kernels: tuple[Weighed, ...]
    basis: str  # timeline | listed | profiled: what the claim's share is a share of
    listed_in: str | None = None


def _gpu(k: KernelRoofline) -> str:
    return k.device_name or f"CC {k.cc}"


def shares(v: Views) -> dict[int, float]:
    totals: dict[str, float] = {}
    for k in v.kernels:
        totals[_gpu(k)] = totals.get(_gpu(k), 0.0) + (k.duration_ns or 0.0)
    return {id(k): (k.duration_ns or 0.0) / totals[_gpu(k)] if totals[_gpu(k)] else 0.0
            for k in v.kernels}


def timeline_share(v: Views, ks: list[KernelRoofline]) -> float | None:
    """With a GPU timeline in scope (Kineto, nsys), the share of its kernel time spent in
    kernels of these names (exact, as recorded); None without a timeline."""
    total = v.metrics.kernel_time_ns
    if not total:
        return None
    return kernel_names.time_of(v, [k.name for k in ks]) / total


_KERNEL_SUMMARY = "cuda_gpu_kern_sum"


def summary_share(v: Views, ks: list[KernelRoofline]) -> tuple[float, str] | None:
    """Without a timeline, with an nsys kernel summary in scope: the share of the time it
    lists (the summary listing the most) spent in these kernels' instantiations, and the
    summary's file name; None without one."""
    if v.metrics.kernel_time_ns:
        return None
    sums = [r for r in v.summaries if r.report == _KERNEL_SUMMARY and r.unit == "ns"
            and r.total > 0]
    if not sums:
        return None
    top = max(sums, key=lambda r: (r.total, r.artifact))
    want = {signature(k.name) for k in ks}
    t = sum(total for name, total in kernel_names.listed(v, top.artifact, _KERNEL_SUMMARY)
            if signature(name) in want)
    return t / top.total, Path(top.artifact).name


def weigh(v: Views, ks: list[KernelRoofline]) -> tuple[float, Tier, Cutoff | None]:
    """The weight of these kernels and the cut it crosses. With a timeline in the bundle, their
    share of its kernel time (a profiled kernel absent from the timeline weighs 0: per-kernel
    time cannot be ranked against timeline time); else with an nsys kernel summary, their
    share of the time it lists (likewise 0 when absent from it); else the largest share they
    take of one GPU's profiled kernel time."""
    share = timeline_share(v, ks)
    if share is None:
        listed = summary_share(v, ks)
        share = listed[0] if listed is not None else None
    if share is None:
        by_gpu: dict[str, float] = {}
        sh = shares(v)
        for k in ks:
            by_gpu[_gpu(k)] = by_gpu.get(_gpu(k), 0.0) + sh[id(k)]
        share = max(by_gpu.values(), default=0.0)
    lim = v.limits
    cut = crossed(share, lim.kernel_red_share, lim.kernel_yellow_share,
                  ("kernel_red_share", "kernel_yellow_share"))
    return share, (cut[0] if cut else "note"), (cut[1] if cut else None)


def facts(v: Views, ks: list[KernelRoofline]) -> KernelFacts:
    sh = shares(v)
    tl_any = timeline_share(v, ks)
    listed = summary_share(v, ks) if tl_any is None else None
    out = []
    for k in ks:
        tl = timeline_share(v, [k])
        one = summary_share(v, [k]) if tl is None else None
        out.append(Weighed(kernel=k, weight=weigh(v, [k])[0], profiled_share=sh[id(k)],
                           timeline_share=tl,
                           listed_share=one[0] if one else None,
                           listed_in=one[1] if one else None))
    return KernelFacts(kernels=tuple(out),
                       basis="timeline" if tl_any is not None else
                       "listed" if listed is not None else "profiled",
                       listed_in=listed[1] if listed is not None else None)


def cites(ks: list[KernelRoofline]) -> tuple[Cite, ...]:
    out: dict[tuple[str, str], Cite] = {}
    for k in ks[:MAX_NAMED]:
        by_file: dict[str, list[str]] = {}
        for c in k.evidence:
            file, _, what = c.partition(": ")
            by_file.setdefault(file, []).append(what)
        for art in k.artifacts:
            whats = by_file.get(Path(art).name)
            out.setdefault((art, k.name), Cite(
                artifact=art, read="ncu-counters" if whats else "ncu-default",
                fill=(("names", "; ".join(dict.fromkeys(whats))),) if whats else ()))
    return tuple(out.values())


def claim(pattern: str, v: Views, ks: list[KernelRoofline], fix: tuple[FixPart, ...],
          form: str = "", wrap: Callable[[KernelFacts], Facts] | None = None) -> Claim:
    """A per-kernel claim: its weight, the kernels it owns, their counters as evidence;
    `wrap` turns the kernels' facts into the pattern's own."""
    share, tier, cutoff = weigh(v, ks)
    kf = facts(v, ks)
    return Claim(pattern=pattern, form=form, share=share, basis="kernel_time", tier=tier,
                 cutoff=cutoff, owns=Owns(kernels=tuple(k.name for k in ks)), fix=fix,
                 cites=cites(ks), rigor="L4", facts=wrap(kf) if wrap else kf)


# --- phrasing (from the claim's KernelFacts) ----------------------------------------------
def basis(f: KernelFacts) -> str:
    """What a claim's share is a share of (see weigh)."""
    if f.basis == "timeline":
        return "the timeline's kernel time"
    return (f"the kernel time listed in {f.listed_in}" if f.basis == "listed"
            else "a GPU's profiled kernel time")


def names(ks: list[KernelRoofline]) -> str:
    shown = ", ".join(f"`{short(k.name, 70)}`" for k in ks[:MAX_NAMED])
    more = f" and {len(ks) - MAX_NAMED} more" if len(ks) > MAX_NAMED else ""
    return shown + more


def kernels_of(f: KernelFacts) -> list[KernelRoofline]:
    return [w.kernel for w in f.kernels]


def head(w: Weighed) -> str:
    """`name` (6.8 µs, 22.4% of profiled kernel time, RTX 5090)."""
    k = w.kernel
    t = duration(k.duration_ns) if k.duration_ns is not None else "duration not collected"
    tl = w.timeline_share
    in_tl = "" if tl is None else (f", {100 * tl:.1f}% of the timeline's kernel time" if tl
                                   else ", not in the timeline of this bundle")
    if tl is None and w.listed_in is not None:
        in_tl = (f", {100 * (w.listed_share or 0):.1f}% of the kernel time listed in "
                 f"{w.listed_in}" if w.listed_share else f", not listed in {w.listed_in}")
    return (f"`{short(k.name, 70)}` ({t}, {100 * w.profiled_share:.1f}% of the kernel time "
            f"profiled on {k.ceilings_note if k.hw_key else _gpu(k)}{in_tl})")


def roofline(k: KernelRoofline) -> str:
    """Achieved FLOP/s and bytes/s against the datasheet ceilings, or what is missing."""
    out = []
    if k.achieved_flops_per_s is not None:
        s = f"{flop_rate(k.achieved_flops_per_s)}"
        if k.pct_of_peak_flops is not None and k.peak_flops_per_s:
            s += (f" = {k.pct_of_peak_flops:.1f}% of the {k.peak_flops_basis} ceiling "
                  f"{flop_rate(k.peak_flops_per_s)}")
        out.append(s)
    if k.dram_bytes_per_s is not None:
        s = f"DRAM {size(k.dram_bytes)} at {bandwidth(k.dram_bytes_per_s)}" if k.dram_bytes \
            else f"DRAM {bandwidth(k.dram_bytes_per_s)}"
        if k.pct_of_peak_dram_bw is not None and k.peak_dram_bytes_per_s:
            s += (f" = {k.pct_of_peak_dram_bw:.1f}% of "
                  f"{bandwidth(k.peak_dram_bytes_per_s)}")
        out.append(s)
    if k.arithmetic_intensity is not None:
        out.append(f"{k.arithmetic_intensity:,.3g} FLOP/byte")
    if not out:
        return "achieved FLOP/s and DRAM bytes not collected, so its distance to the " \
               "roofline is unknown"
    if k.hw_key is None:
        out.append(k.ceilings_note)
    return "; ".join(out)


def occupancy(k: KernelRoofline) -> str:
    parts = []
    if k.achieved_occupancy_pct is not None:
        parts.append(f"achieved occupancy {k.achieved_occupancy_pct:.1f}%")
    if k.theoretical_occupancy_pct is not None:
        lim = f", limited by {k.occupancy_limiter}" if k.occupancy_limiter else ""
        parts.append(f"theoretical {k.theoretical_occupancy_pct:.1f}%{lim}")
    if k.waves_per_sm is not None:
        parts.append(f"{k.waves_per_sm:,.2f} waves per SM")
    return ", ".join(parts)


def ncu_says(k: KernelRoofline, rules: tuple[str, ...]) -> str:
    """ncu's own verdict for the same question, quoted as evidence next to ours."""
    for r in k.ncu_rules:
        if r.get("rule") in rules and r.get("message"):
            title = f"{r['title']}: " if r.get("title") else ""
            return f" ncu's own {r['rule']} rule: \"{title}{short(str(r['message']), 160)}\""
    return ""


def details(f: KernelFacts) -> dict[str, object]:
    return {"kernels": [w.kernel.name for w in f.kernels]}
