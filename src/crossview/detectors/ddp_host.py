"""ddp-host-bookkeeping: the GPU idles while DistributedDataParallel does its own host work.

DDP's defaults add host work to every step that the model does not need: with
`broadcast_buffers=True` each forward flattens every buffer, broadcasts it from rank 0 and
copies it back (`aten::flatten_dense_tensors` / `aten::unflatten_dense_tensors`), and with
`gradient_as_bucket_view=False` the reducer copies every all-reduced bucket back into the
parameters' `.grad` (`torch.distributed.ddp.reducer::copy_bucket_to_grad`). The ops under them
are generic ATen ops (narrow, slice, copy_), so without this cause the time reads as generic
dispatch and the fix offered is CUDA graphs, which removes neither. The share is the time
account's `ddp_bookkeeping` slice (knowledge/account.yaml): GPU idle while the launching
thread ran inside those frames; the fix names the parts the capture shows.
"""

from __future__ import annotations

from crossview.core.claim import Claim, Facts, FixPart, Owns, Phrasing
from crossview.detectors.account_share import AccountSlice, facts, mean_of, per_step, slice_of
from crossview.detectors.common import cites, crossed, ms, pct, short
from crossview.detectors.declare import About, Declaration
from crossview.views.views import Views

PATTERN = "ddp-host-bookkeeping"
CAUSES = ("ddp_bookkeeping",)
BUFFERS = PATTERN + "-buffers"
GRAD_COPY = PATTERN + "-grad-copy"
# which fix each frame of the slice calls for (the account.yaml cause's own frames)
_PART = {"aten::flatten_dense_tensors": BUFFERS, "aten::unflatten_dense_tensors": BUFFERS,
         "torch.distributed.ddp.reducer::copy_bucket_to_grad": GRAD_COPY}
_WHAT = {BUFFERS: "re-broadcasts its buffers before each forward (`broadcast_buffers=True`)",
         GRAD_COPY: "copies each all-reduced bucket back into `.grad` "
                    "(`gradient_as_bucket_view=False`)"}


class Bookkeeping(Facts, frozen=True, kw_only=True):
    slice: AccountSlice
    parts: tuple[str, ...]  # the fixes.yaml keys of the parts the capture shows


def detect(v: Views) -> list[Claim]:
    sl = slice_of(v, *CAUSES)
    if sl is None or sl.ns <= 0:
        return []
    lim = v.limits
    cut = crossed(sl.share, lim.ddp_red_share, lim.ddp_yellow_share,
                  ("ddp_red_share", "ddp_yellow_share"))
    if cut is None:
        return []
    frames = [f for r in sl.rows for f in r.top_frames]
    parts = tuple(k for k in (BUFFERS, GRAD_COPY) if any(_PART.get(f.frame) == k
                                                         for f in frames))
    if not parts:
        return []
    return [Claim(
        pattern=PATTERN, share=sl.share, tier=cut[0], cutoff=cut[1], owns=Owns(causes=CAUSES),
        fix=(*(FixPart(key=k) for k in parts), FixPart(key="code-site", located=True)),
        cites=cites(v, "ddp-bookkeeping"), facts=Bookkeeping(slice=facts(sl), parts=parts))]


def phrase(c: Claim) -> Phrasing:
    f = c.facts
    assert isinstance(f, Bookkeeping)
    sl = f.slice
    top = "; ".join(f"`{short(t.frame, 80)}` {ms(t.ns)}" for t in sl.top)
    what = " and ".join(_WHAT[k] for k in f.parts)
    return Phrasing(
        title=f"DDP's own host bookkeeping: the GPU waits on it {pct(c.share)} of the step",
        observation=(f"{per_step(sl)} the GPU idled {ms(sl.ns)} ({pct(c.share)} of the "
                     f"{ms(sl.wall_ns)} step, {mean_of(sl)}) while the launching "
                     f"thread ran DistributedDataParallel's bookkeeping: {top}. DDP {what}; "
                     "the ATen ops under these frames (narrow, slice, copy_) launch little "
                     "GPU work, and a CUDA graph of the model removes neither."),
        effect=(f"At most {ms(sl.ns)} per step ({pct(c.share)}), the GPU idle "
                "charged to these frames: an A/B compares the step time with the "
                "DDP options changed."),
        details={"parts": list(f.parts)})


DECLARATION = Declaration(
    patterns=(PATTERN,), detect=detect, phrase=phrase, causes=CAUSES,
    thresholds=("ddp_red_share", "ddp_yellow_share"),
    fix_keys=(BUFFERS, GRAD_COPY, "code-site"),
    about=About(side="host", levers=("ddp-bookkeeping",)))
