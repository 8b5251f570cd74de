"""Small shared helpers for detectors: severity cut-offs and unit formatting."""

from __future__ import annotations

from crossview.core.finding import Evidence, Severity
from crossview.knowledge import evidence_tables
from crossview.knowledge.fixes import where_text
from crossview.knowledge.frames import compiled_prefixes
from crossview.units import duration
from crossview.views.views import Views


def severity(share: float, red: float, yellow: float) -> Severity | None:
    if share >= red:
        return "red"
    if share >= yellow:
        return "yellow"
    return None


ms = duration  # nanoseconds with their unit


def pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def artifact_kinds(v: Views) -> dict[str, str]:
    """Reader kind (kineto, nsys, …) of each artifact in scope, by path."""
    return dict(v.store.sql(
        "SELECT path, kind FROM artifacts WHERE path IN (SELECT unnest($p))",
        {"p": list(v.filter.artifacts)}).fetchall())


def evidence(v: Views, what: str) -> list[Evidence]:
    # a format with many tables (an nsys export) also names the tables that were read
    kinds = artifact_kinds(v)
    # host CPU samples hold no trace rows: detectors/host_cpu.py cites them on their own
    return [Evidence(a, what + evidence_tables.cite(kinds.get(a), what))
            for a in v.filter.artifacts if kinds.get(a) != "host-jsonl"]


def kernel_evidence(v: Views, what: str) -> list[Evidence]:
    """A kernel-side finding's evidence: the artifacts in scope that hold kernels. A counters
    file beside the trace holds none (and "N artifacts" is no file a bundle can cite)."""
    arts = sorted({d.artifact for d in v.metrics.devices if d.kernel_count})
    return [Evidence(a, what) for a in arts] or [Evidence(v.evidence_path, what)]


def short(name: str, limit: int = 90) -> str:
    """Shorten a recorded name with an ellipsis only (never paraphrase)."""
    return name if len(name) <= limit else name[: limit - 1] + "…"


def fix_where(v: Views) -> str:
    """The {where} sentence of a fix: the user's hottest own frame, or why none is named."""
    return where_text(*v.code_site())


def step_share(v: Views, kernel_share: float) -> float:
    """A share of kernel time as a share of the steady step (for ranking beside the time
    account's findings): × the busy-kernel fraction of the mean steady step. Unchanged when
    the capture has no time account."""
    acc = v.account
    if acc is None or not acc.steady_state:
        return kernel_share
    busy = sum(c.share_of_step for c in acc.steady_state if not c.idle)
    return kernel_share * busy


def is_compiled(v: Views) -> bool:
    """torch.compile ran (part of) the captured step: its compiled-function host ops are in
    the trace (frames.yaml `compiled`)."""
    prefixes = compiled_prefixes()
    return bool(v.store.sql("SELECT 1 FROM f_host WHERE kind IN ('op', 'annotation') AND ("
                            + " OR ".join("starts_with(name, ?)" for _ in prefixes)
                            + ") LIMIT 1", prefixes).fetchall())


def kernel_time_ab(busy_pct: float, bound_pct: float, measured: str, kernels: str,
                   removed: str = "the kernel time removed") -> str:
    """What an A/B of a kernel-side lever checks: on a GPU busy past `bound_pct` of its span
    the kernels are the step, so the step shortens by about the kernel time removed."""
    if busy_pct >= bound_pct:
        return (f"The GPU is busy {busy_pct:.1f}% of its span, so the step shortens by about "
                f"{removed}: an A/B compares {measured} before and after.")
    return (f"An A/B compares the kernel time of {kernels}; the step shortens only once the "
            "GPU's idle time is gone.")


_PY_FRAMES = """
SELECT count(*) FROM f_host h JOIN (SELECT unnest($s) AS s, unnest($e) AS e) w
  ON h.start_ns >= w.s AND h.start_ns < w.e WHERE h.kind = 'python'
"""


def profiler_stack_note(v: Views) -> str:
    """A sentence for findings sized by host time when the capture records Python stacks
    densely (`with_stack`): the profiler's own per-frame cost is part of that host time (B200
    vLLM eager: 15,160 Python frames in 87.2 ms of step, 174 per ms). "" below
    thresholds.yaml profiler_stack_frames_per_ms or without steps."""
    steps = v.steps.steady
    wall = sum(s.wall_ns for s in steps)
    if not wall:
        return ""
    n = int(v.store.sql(_PY_FRAMES, {"s": [s.start_ns for s in steps],
                                     "e": [s.end_ns for s in steps]}).fetchall()[0][0])
    per_ms = n / (wall / 1e6)
    if per_ms < v.limits.profiler_stack_frames_per_ms:
        return ""
    return (f" Time the step without the profiler first: this capture records {n:,} Python "
            f"frames in {ms(wall)} of steps ({per_ms:,.0f} per ms, `with_stack=True`), and "
            "their recording cost is part of the host time above.")
