"""dataloader-starved: the GPU idles while the input pipeline runs.

With a time account (views/device/account.py) the share is the account's `data_loading` slice of the
steady-state step: GPU idle while the launching thread was inside DataLoader frames, no other
finding charges it. Without one (no kernels in steps), the GPU idle inside DataLoader
intervals over the kernel span."""

from __future__ import annotations

from crossview.core.finding import Finding
from crossview.detectors.account_share import claims, per_step, slice_of
from crossview.detectors.common import evidence, fix_where, ms, pct, severity, short
from crossview.detectors.declare import Declaration
from crossview.knowledge import frames
from crossview.knowledge.fixes import fix_for, where_text
from crossview.store import host_calls
from crossview.store.host_calls import NamesMatching
from crossview.views.host.callers import user_frame_above
from crossview.views.views import Views

PATTERN = "dataloader-starved"
CAUSES = ("data_loading",)


def detect(v: Views) -> list[Finding]:
    m, lim = v.metrics, v.limits
    if m.cpu_only or m.kernel_span_ns == 0:
        return []
    fetches = NamesMatching("dataloader", frames.dataloader_pattern())
    eff = v.gpu_inside(fetches)
    if eff.count == 0 or eff.host_ns == 0:
        return []
    sl = slice_of(v, *CAUSES)
    share = sl.share if sl is not None else eff.gpu_idle_inside_ns / m.kernel_span_ns
    sev = severity(share, lim.dataloader_red_share, lim.dataloader_yellow_share)
    if sev is None:
        return []
    obs = (f"{eff.inside:,} DataLoader fetch{'es' if eff.inside != 1 else ''} took "
           f"{ms(eff.host_ns)} inside the kernel span; "
           f"the GPU was busy only {eff.gpu_busy_inside_pct:.1f}% of that time "
           f"({ms(eff.gpu_idle_inside_ns)} idle).")
    if sl is not None:
        top = "; ".join(f"`{short(f.frame, 80)}` {ms(f.ns)}" for f in sl.top_frames)
        obs += (f" {per_step(v)} the GPU idles {ms(sl.ns)} waiting on the input pipeline "
                f"({pct(share)} of the {ms(sl.wall_ns)} step, mean of {sl.steps} steps): "
                f"{top}.")
    uf = user_frame_above(v.store, host_calls.names(v.store, fetches))
    where_txt = where_text("dataloader-frame", uf) if uf else fix_where(v)
    return [Finding(
        pattern=PATTERN, severity=sev,
        title=f"DataLoader-starved: the GPU waits on input {pct(share)} of the step",
        observation=obs, fix=fix_for(PATTERN, v.engine, where_txt), share=share,
        evidence=evidence(v, "DataLoader host intervals against device idle gaps (time "
                             "account: data_loading)"),
        expected_effect=(f"Up to {ms(sl.ns)} per step ({pct(share)}) if batches are ready "
                         "when the step needs them." if sl else ""),
        details=claims(*CAUSES) if sl is not None else {},
    )]


DECLARATION = Declaration(
    patterns=(PATTERN,), detect=detect, causes=CAUSES,
    thresholds=("dataloader_red_share", "dataloader_yellow_share"), fix_keys=(PATTERN,))
