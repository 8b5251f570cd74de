"""layout-conversions: kernels that only convert tensors between NCHW and NHWC.

cuDNN runs its tensor-core convolutions in NHWC; a model kept in NCHW (PyTorch's default
memory format) pays a conversion kernel on each convolution's input and output
(op_roofline.yaml `layout_kernel_markers`). Their share of kernel time is what
`channels_last` removes. A kernel-side claim: the step gains at most what the critical path
holds of it.
"""

from __future__ import annotations

from msgspec import Struct

from crossview.core.claim import Claim, Count, Facts, FixPart, Ns, Owns, Phrasing
from crossview.detectors.common import crossed, kernel_cites, ms, pct, short
from crossview.detectors.declare import About, Declaration
from crossview.sol.op_roofline import limits
from crossview.views.device import kernel_names
from crossview.views.views import Views

PATTERN = "layout-conversions"



class Conversion(Struct, frozen=True):
    name: str
    count: Count
    ns: Ns


class Layout(Facts, frozen=True, kw_only=True):
    kernels: tuple[Conversion, ...]
    count: Count
    ns: Ns
    kernel_ns: Ns


def detect(v: Views) -> list[Claim]:
    m = v.metrics
    if m.cpu_only or not m.kernel_time_ns:
        return []
    markers = [str(x) for x in limits()["layout_kernel_markers"]]
    rows = kernel_names.matching(v, "|".join(markers))
    if not rows:
        return []
    n, t = sum(int(r[1]) for r in rows), sum(int(r[2]) for r in rows)
    share = t / m.kernel_time_ns
    cut = crossed(share, v.limits.layout_red_share, v.limits.layout_yellow_share,
                  ("layout_red_share", "layout_yellow_share"))
    if cut is None:
        return []
    return [Claim(
        pattern=PATTERN, share=share, basis="kernel_time", tier=cut[0], cutoff=cut[1],
        owns=Owns(kernels=tuple(str(r[0]) for r in rows)), fix=(FixPart(key=PATTERN),),
        cites=kernel_cites(v, "layout-kernels"),
        facts=Layout(kernels=tuple(Conversion(str(a), int(b), int(c)) for a, b, c in rows),
                     count=n, ns=t, kernel_ns=m.kernel_time_ns))]


def phrase(c: Claim) -> Phrasing:
    f = c.facts
    assert isinstance(f, Layout)
    names = "; ".join(f"`{short(k.name, 60)}` ×{k.count:,} ({ms(k.ns)})" for k in f.kernels[:3])
    return Phrasing(
        title=f"Layout conversions: {f.count:,} NCHW↔NHWC kernels, {pct(c.share)} of kernel time",
        observation=(f"{names}: {ms(f.ns)} of {ms(f.kernel_ns)} kernel time converts "
                     "tensors between NCHW and NHWC around cuDNN's NHWC (tensor-core) "
                     "convolutions, because the model and its inputs are in PyTorch's "
                     "default NCHW memory format."),
        effect=(f"channels_last removes these {f.count:,} kernels ({ms(f.ns)} of kernel "
                "time); an A/B compares their count and the median step."),
        details={"kernels": f.count, "time_ns": f.ns, "names": [k.name for k in f.kernels[:5]]})


DECLARATION = Declaration(
    patterns=(PATTERN,), detect=detect, phrase=phrase, causes=(),
    thresholds=("layout_red_share", "layout_yellow_share"), fix_keys=(PATTERN,),
    about=About(side="GPU kernel", kernel_side=True))
