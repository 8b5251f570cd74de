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

from crossview.core.finding import Finding
from crossview.detectors.account_share import claims, per_step, slice_of
from crossview.detectors.common import evidence, fix_where, ms, pct, severity, short
from crossview.detectors.declare import Declaration
from crossview.knowledge.fixes import fix_for
from crossview.views.views import Views

PATTERN = "ddp-host-bookkeeping"
CAUSES = ("ddp_bookkeeping",)
BUFFERS = PATTERN + "-buffers"
GRAD_COPY = PATTERN + "-grad-copy"
# which fix each frame of the slice calls for (the account.yaml cause's own frames)
_PART = {"aten::flatten_dense_tensors": BUFFERS, "aten::unflatten_dense_tensors": BUFFERS,
         "torch.distributed.ddp.reducer::copy_bucket_to_grad": GRAD_COPY}


def detect(v: Views) -> list[Finding]:
    sl = slice_of(v, *CAUSES)
    if sl is None or sl.ns <= 0:
        return []
    lim = v.limits
    sev = severity(sl.share, lim.ddp_red_share, lim.ddp_yellow_share)
    if sev is None:
        return []
    frames = [f for r in sl.rows for f in r.top_frames]
    parts = [k for k in (BUFFERS, GRAD_COPY) if any(_PART.get(f.frame) == k for f in frames)]
    if not parts:
        return []
    top = "; ".join(f"`{short(f.frame, 80)}` {ms(f.ns)}" for f in sl.top_frames)
    what = " and ".join(
        {BUFFERS: "re-broadcasts its buffers before each forward (`broadcast_buffers=True`)",
         GRAD_COPY: "copies each all-reduced bucket back into `.grad` "
                    "(`gradient_as_bucket_view=False`)"}[k] for k in parts)
    fix = " ".join([fix_for(k, None) for k in parts] + [fix_where(v)]).strip()
    return [Finding(
        pattern=PATTERN, severity=sev,
        title=f"DDP's own host bookkeeping: the GPU waits on it {pct(sl.share)} of the step",
        observation=(f"{per_step(v)} the GPU idled {ms(sl.ns)} ({pct(sl.share)} of the "
                     f"{ms(sl.wall_ns)} step, mean of {sl.steps} steps) while the launching "
                     f"thread ran DistributedDataParallel's bookkeeping: {top}. DDP {what}; "
                     "the ATen ops under these frames (narrow, slice, copy_) launch little "
                     "GPU work, and a CUDA graph of the model removes neither."),
        fix=fix, share=sl.share,
        evidence=evidence(v, "DDP bookkeeping frames of the launching thread during GPU idle "
                             "(time account: ddp_bookkeeping)"),
        expected_effect=(f"At most {ms(sl.ns)} per step ({pct(sl.share)}), the GPU idle "
                         "charged to these frames: an A/B compares the step time with the "
                         "DDP options changed."),
        details=claims(*CAUSES) | {"parts": parts},
    )]


DECLARATION = Declaration(
    patterns=(PATTERN,), detect=detect, causes=CAUSES,
    thresholds=("ddp_red_share", "ddp_yellow_share"), fix_keys=(BUFFERS, GRAD_COPY))
