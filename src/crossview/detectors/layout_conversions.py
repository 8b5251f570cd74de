"""layout-conversions: kernels that only convert tensors between NCHW and NHWC.

cuDNN runs its tensor-core convolutions in NHWC; a model kept in NCHW (PyTorch's default
memory format) pays a conversion kernel on each convolution's input and output
(op_roofline.yaml `layout_kernel_markers`). Their share of kernel time is what
`channels_last` removes. A kernel-side finding (replay.yaml `kernel_side`): the step gains at
most what the critical path holds of it.
"""

from __future__ import annotations

from crossview.core.finding import Finding
from crossview.detectors.common import kernel_evidence, ms, pct, severity, short
from crossview.detectors.declare import Declaration
from crossview.knowledge.fixes import fix_for
from crossview.sol.op_roofline import limits
from crossview.store.host_calls import NO_LIMIT
from crossview.views.views import Views

PATTERN = "layout-conversions"

_BY_NAME = f"""
SELECT name, count(*), sum(dur_ns) FROM f_gpu
WHERE kind = 'kernel' AND name IN (
  SELECT name FROM (SELECT DISTINCT name FROM f_gpu WHERE kind = 'kernel' LIMIT {NO_LIMIT})
  WHERE regexp_matches(lower(name), $re))
GROUP BY name ORDER BY 3 DESC, 1
"""  # the regex on the distinct names, not on every kernel


def detect(v: Views) -> list[Finding]:
    m = v.metrics
    if m.cpu_only or not m.kernel_time_ns:
        return []
    markers = [str(x) for x in limits()["layout_kernel_markers"]]
    rows = v.store.sql(_BY_NAME, {"re": "|".join(markers)}).fetchall()
    if not rows:
        return []
    n, t = sum(int(r[1]) for r in rows), sum(int(r[2]) for r in rows)
    share = t / m.kernel_time_ns
    sev = severity(share, v.limits.layout_red_share, v.limits.layout_yellow_share)
    if sev is None:
        return []
    names = "; ".join(f"`{short(str(name), 60)}` ×{int(k):,} ({ms(int(ns))})"
                      for name, k, ns in rows[:3])
    return [Finding(
        pattern=PATTERN, severity=sev,
        title=(f"Layout conversions: {n:,} NCHW↔NHWC kernels, {pct(share)} of kernel time"),
        observation=(f"{names}: {ms(t)} of {ms(m.kernel_time_ns)} kernel time converts "
                     "tensors between NCHW and NHWC around cuDNN's NHWC (tensor-core) "
                     "convolutions, because the model and its inputs are in PyTorch's "
                     "default NCHW memory format."),
        fix=fix_for(PATTERN, None), share=share, share_of="kernel_time",
        evidence=kernel_evidence(v, "kernel names and durations (layout conversion kernels)"),
        expected_effect=(f"channels_last removes these {n:,} kernels ({ms(t)} of kernel "
                         "time); an A/B compares their count and the median step."),
        details={"kernels": n, "time_ns": t, "names": [str(r[0]) for r in rows[:5]]},
    )]


DECLARATION = Declaration(
    patterns=(PATTERN,), detect=detect, causes=(),
    thresholds=("layout_red_share", "layout_yellow_share"), fix_keys=(PATTERN,))
