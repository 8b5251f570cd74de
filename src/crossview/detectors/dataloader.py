"""dataloader-starved: the GPU idles while the input pipeline runs.

With a time account (views/device/account.py) the share is the account's `data_loading` slice
of the steady-state step: GPU idle while the launching thread was inside DataLoader frames, no
other claim charges it. Without one (no kernels in steps), the GPU idle inside DataLoader
intervals over the kernel span."""

from __future__ import annotations

from crossview.core.claim import Claim, Count, Facts, FixPart, Ns, Owns, Pct, Phrasing, Site
from crossview.detectors.account_share import AccountSlice, facts, mean_of, per_step, slice_of
from crossview.detectors.common import cites, crossed, ms, pct, short
from crossview.detectors.declare import About, Declaration
from crossview.knowledge import frames
from crossview.views.host import selections
from crossview.views.host.callers import user_frame_above
from crossview.views.host.selections import NamesMatching
from crossview.views.views import Views

PATTERN = "dataloader-starved"
CAUSES = ("data_loading",)


class Loader(Facts, frozen=True, kw_only=True):
    fetches: Count  # DataLoader fetches inside the kernel span
    host_ns: Ns
    gpu_busy_pct: Pct  # GPU busy inside them
    gpu_idle_ns: Ns
    slice: AccountSlice | None = None


def detect(v: Views) -> list[Claim]:
    m, lim = v.metrics, v.limits
    if m.cpu_only or m.kernel_span_ns == 0:
        return []
    fetches = NamesMatching("dataloader", frames.dataloader_pattern())
    eff = v.gpu_inside(fetches)
    if eff.count == 0 or eff.host_ns == 0:
        return []
    sl = slice_of(v, *CAUSES)
    share = sl.share if sl is not None else eff.gpu_idle_inside_ns / m.kernel_span_ns
    cut = crossed(share, lim.dataloader_red_share, lim.dataloader_yellow_share,
                  ("dataloader_red_share", "dataloader_yellow_share"))
    if cut is None:
        return []
    uf = user_frame_above(v, selections.names(v, fetches))
    return [Claim(
        pattern=PATTERN, share=share, tier=cut[0], cutoff=cut[1],
        owns=Owns(causes=CAUSES if sl is not None else ()),
        fix=(FixPart(key=PATTERN, site=Site("dataloader-frame", uf) if uf else None,
                     located=True),),
        cites=cites(v, "dataloader"),
        facts=Loader(fetches=eff.inside, host_ns=eff.host_ns,
                     gpu_busy_pct=eff.gpu_busy_inside_pct, gpu_idle_ns=eff.gpu_idle_inside_ns,
                     slice=facts(sl) if sl is not None else None))]


def phrase(c: Claim) -> Phrasing:
    f = c.facts
    assert isinstance(f, Loader)
    obs = (f"{f.fetches:,} DataLoader fetch{'es' if f.fetches != 1 else ''} took "
           f"{ms(f.host_ns)} inside the kernel span; "
           f"the GPU was busy only {f.gpu_busy_pct:.1f}% of that time "
           f"({ms(f.gpu_idle_ns)} idle).")
    sl = f.slice
    if sl is not None:
        top = "; ".join(f"`{short(t.frame, 80)}` {ms(t.ns)}" for t in sl.top)
        obs += (f" {per_step(sl)} the GPU idles {ms(sl.ns)} waiting on the input pipeline "
                f"({pct(c.share)} of the {ms(sl.wall_ns)} step, {mean_of(sl)}): "
                f"{top}.")
    return Phrasing(
        title=f"DataLoader-starved: the GPU waits on input {pct(c.share)} of the step",
        observation=obs,
        effect=(f"Up to {ms(sl.ns)} per step ({pct(c.share)}) if batches are ready "
                "when the step needs them." if sl else ""))


DECLARATION = Declaration(
    patterns=(PATTERN,), detect=detect, phrase=phrase, causes=CAUSES,
    thresholds=("dataloader_red_share", "dataloader_yellow_share"), fix_keys=(PATTERN,),
    about=About(side="host", levers=("dataloader-workers",), refutable=True,
                corroborated_by=("host-cpu",)))
