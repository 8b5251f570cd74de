"""Markdown recap in the template of conventions.md §4. Formats only; computes nothing."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from crossview.analysis import Analysis
from crossview.core import inert
from crossview.core.finding import Finding
from crossview.detectors import about
from crossview.identity import shown
from crossview.knowledge import api_roles
from crossview.knowledge.fixes import fix_for
from crossview.knowledge.loader import load_yaml
from crossview.render import (
    account_md,
    capture_md,
    md_text,
    metrics_md,
    op_roofline_md,
    ranks_md,
    sampled_md,
)
from crossview.render import kernels as kernels_md
from crossview.render.recap_lines import artifact_line, fanout_line
from crossview.units import duration
from crossview.views.device.trace_metrics import Metrics
from crossview.views.host import tree_ops
from crossview.views.host.calltree import CallTree, TreeNode
from crossview.views.views import Views

# knowledge/trees.yaml: hide branches under min_share of the view's time, at most
# max_children per node, a single-child chain longer than chain_keep shown as first … last
TREE_MIN_SHARE = float(load_yaml("trees.yaml")["min_share"])
TREE_MAX_CHILDREN = int(load_yaml("trees.yaml")["max_children"])
CHAIN_KEEP = int(load_yaml("trees.yaml")["chain_keep"])
SUMMARY_CAPTURES = int(load_yaml("trees.yaml")["summary_captures"])
SUMMARY_SYNC_MIN_SHARE = float(load_yaml("trees.yaml")["summary_sync_min_share"])
SUMMARY_SYNCS_KEPT = int(load_yaml("trees.yaml")["summary_syncs_kept"])
SUMMARY_MAX_LINES = int(load_yaml("trees.yaml")["summary_max_lines"])


_ms = duration


def _cut(name: str, limit: int = 100) -> str:
    # a name is data: one line, nothing a terminal or viewer obeys; no object address
    name = inert.name(shown(name))
    return name if len(name) <= limit else name[: limit - 1] + "…"


def _code(name: str, cell: bool = False) -> str:
    """A name as inline code, safe with backticks (and with pipes inside table cells)."""
    return md_text.code(name, cell)


def _problems(problems: list[str]) -> str:
    return "; ".join(inert.name(p) for p in problems)  # they may quote a name


def _label(n: TreeNode, total: int, counts: bool = False) -> str:
    if n.kind == "sync":  # a sync point placed under its calling frame (views/host/tree_ops.py)
        how = ("host time; blocks when the host side is pageable"
               if api_roles.role_of(n.frame) == "async_memcpy" else "host time blocked")
        return f"{_cut(n.frame)} ×{n.count:,}  [{_ms(n.time_ns)} {how}]  ⚠️"
    if n.repeats > 1:  # merged repeated steps / layers
        n = replace(n, frame=f"{n.frame} ×{n.repeats}")
    share = f"{100 * n.time_ns / total:.1f}%" if total else "–"
    warn = "  ⚠️" if n.sync else ""
    amount = f"{n.time_ns:,} samples" if counts else _ms(n.time_ns)  # counts: no period known
    return f"{_cut(n.frame)}  [{amount}, {share}]{warn}"


def _visible(children: list[TreeNode], total: int, most: int = TREE_MAX_CHILDREN
             ) -> list[TreeNode]:
    keep = [c for c in children if total and c.time_ns / total >= TREE_MIN_SHARE
            and c.kind != "sync"][:most]
    return keep + [c for c in children if c.kind == "sync"]  # sync points always show


def _holds_all(parent: TreeNode, child: TreeNode, total: int) -> bool:
    """The child carries the parent's time but for less than a visible share: one line may
    show both under the child's time (else the line would print the child's time for the
    parent's, hiding what the rest of its children or its self time hold)."""
    return parent.time_ns - child.time_ns < TREE_MIN_SHARE * total


def _chain(n: TreeNode, total: int, most: int = TREE_MAX_CHILDREN
           ) -> tuple[list[TreeNode], TreeNode]:
    """Follow single visible non-kernel children that hold their parent's time: returns
    (chain, last node)."""
    chain = [n]
    while True:
        vis = _visible(chain[-1].children, total, most)
        if len(vis) == 1 and vis[0].kind != "kernel" and _holds_all(chain[-1], vis[0], total):
            chain.append(vis[0])
        else:
            return chain, chain[-1]


def _chain_text(chain: list[TreeNode], total: int, counts: bool = False) -> str:
    if len(chain) <= CHAIN_KEEP:
        return " › ".join(_cut(c.frame, 60) for c in chain[:-1]) + (
            " › " if len(chain) > 1 else "") + _label(chain[-1], total, counts)
    # first … last, keeping merged repeats (×N layers / steps) visible in between
    parts, hidden = [_cut(chain[0].frame, 60)], 0
    for c in chain[1:-1]:
        if c.repeats > 1:
            if hidden:
                parts.append(f"… {hidden} frame{'s' if hidden > 1 else ''} …")
            parts.append(f"{_cut(c.frame, 60)} ×{c.repeats}")
            hidden = 0
        else:
            hidden += 1
    if hidden:
        parts.append(f"… {hidden} frame{'s' if hidden > 1 else ''} …")
    return " › ".join(parts) + " › " + _label(chain[-1], total, counts)


def _tree_lines(nodes: list[TreeNode], total: int, prefix: str, out: list[str],
                counts: bool = False, most: int = TREE_MAX_CHILDREN) -> None:
    vis = _visible(nodes, total, most)
    for i, n in enumerate(vis):
        last = i == len(vis) - 1
        branch = "└── " if last else "├── "
        if n.kind == "kernel":
            out.append(f"{prefix}{branch}→ {_label(n, total, counts)}  ×{n.count:,}")
            continue
        chain, end = _chain(n, total, most)
        kids = _visible(end.children, total, most)
        if len(kids) == 1 and kids[0].kind == "kernel" and _holds_all(end, kids[0], total):
            k = kids[0]
            out.append(f"{prefix}{branch}{_chain_text(chain, total, counts)}  → {_cut(k.frame)}"
                       f"  ×{k.count:,}")
            continue
        out.append(prefix + branch + _chain_text(chain, total, counts))
        _tree_lines(end.children, total, prefix + ("    " if last else "│   "), out, counts,
                    most)


def render_tree(tree: CallTree, sync_lines: list[str] | None = None,
                placed: list[TreeNode] | None = None, most: int = TREE_MAX_CHILDREN
                ) -> list[str]:
    """The tree, then sync points (host calls that block on the GPU) as last siblings;
    at most `most` children per node."""
    out: list[str] = []
    extra = sync_lines or []
    total = tree.samples if tree.counts_only else tree.total_ns  # shares of samples then
    roots = tree_ops.merge_repeats(tree.roots) if placed is None else placed
    _tree_lines(roots, total, "", out, tree.counts_only, most)
    if extra and out:
        # the tree's last root is no longer last: turn its └── into ├── and its
        # continuation prefix into │
        last_root = max(i for i, line in enumerate(out) if not line.startswith((" ", "│")))
        out[last_root] = "├── " + out[last_root][4:]
        for i in range(last_root + 1, len(out)):
            out[i] = "│" + out[i][1:]
    for i, line in enumerate(extra):
        out.append(("└── " if i == len(extra) - 1 else "├── ") + line)
    return out


def _top_kernels(v: Views) -> list[str]:
    if not v.top_kernels:
        return []
    lines = ["\n**Top kernels** (same filter; time share of kernel time)\n",
             "| kernel | family | × | total | median | share | via graph |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for k in v.top_kernels[:8]:
        lines.append(f"| {_code(_cut(k.name, 80), cell=True)} | {k.family} | {k.count:,} "
                     f"| {_ms(k.time_ns)} | {_ms(k.median_ns)} | {100 * k.share:.1f}% "
                     f"| {k.via_graph:,} |")
    return lines


def _metrics_block(v: Views) -> list[str]:
    m: Metrics = v.metrics
    src = f"(trace: {inert.name(v.evidence_path)})"
    if m.summary_only:
        return capture_md.summary_only_block(v)
    if m.cpu_only and v.filter.gpu_elsewhere:
        return [f"**GPU metrics** none in this selection ({v.filter.describe()}): the "
                f"capture's GPU ops lie outside it {src}. {capture_md.host_recorded(v)}"]
    if m.cpu_only:
        return [f"**GPU metrics** none — this is a **CPU-only** capture (no kernel, memcpy or "
                f"memset events) {src}. {capture_md.host_recorded(v)} "
                "No hardware counters (DCGM/NVML/ncu) or serving "
                "metrics in this input."]
    if kernels_md.kernels_only(v):  # ncu counters, no timeline
        return kernels_md.metrics_lines(v)
    if m.gpu_samples and not m.devices:  # sampled GPU stacks only: no timeline
        return sampled_md.metrics_lines(v)
    idle = m.idle
    lines = [
        f"**GPU metrics** {src}",
        f"- Kernel busy **{m.kernel_busy_pct:.1f}%** of the {_ms(m.kernel_span_ns)} kernel span "
        f"({m.kernel_count:,} kernels, {_ms(m.kernel_time_ns)} kernel time, "
        f"{_ms(m.kernel_busy_ns)} busy as a union).",
        f"- Idle {_ms(idle.total_ns)}: host wait {_ms(idle.host_wait_ns)}, kernel wait "
        f"{_ms(idle.kernel_wait_ns)}, other {_ms(idle.other_ns)} (HTA's classification).",
    ]
    for d in m.devices:
        lines.append(f"  - {inert.name(Path(d.artifact).name)} device {d.device}"
                     f"{' (' + d.name + ')' if d.name else ''}: busy {d.kernel_busy_pct:.1f}% "
                     f"of {_ms(d.kernel_span_ns)}")
    if m.launch:
        ls = m.launch
        lines.append(
            f"- Launches: {ls.launch_calls:,} launch calls ({_ms(ls.launch_time_ns)} host), "
            f"{ls.graph_launches:,} graph launches → {ls.kernels_via_graph:,} kernels; "
            f"median kernel {_ms(ls.median_kernel_ns)}; {ls.short_kernels:,} kernels under "
            f"{_ms(ls.short_kernel_ns)}; {ls.kernels_launch_not_captured:,} kernels whose "
            "launch is not in the capture.")
    if m.copies:
        cp = "; ".join(
            " ".join(p for p in (c.kind, c.copy_kind, f"({c.mem_kinds})" if c.mem_kinds else "",
                                 f"×{c.count:,}", _ms(c.time_ns)) if p)
            for c in m.copies[:4])
        lines.append(f"- Copies: {cp}.")
    if m.sync_apis:
        sy = "; ".join(f"{a.name} ×{a.count:,} {_ms(a.time_ns)}" for a in m.sync_apis[:4])
        lines.append(f"- Sync and copy calls (host time): {sy}.")
    if not v.gpu_metrics.present:  # else the workload-metrics block above lists them
        lines.append(kernels_md.counters_line(v) or
                     "- Counters: none in this input (no DCGM/NVML/ncu); serving metrics: none.")
    return lines


def _cpu_check(v: Views) -> str:
    if v.cpu.samples:  # sampled stacks in scope (nsys CPU sampling): L1
        return capture_md.sampled_cpu_check(v)
    if v.metrics.summary_only:
        return "No host timeline in this input (summary-only evidence)."
    top = [f for f in v.top_self if f.share >= 0.01][:4]
    if not top:
        return "Nothing else surfaced on the host side."
    parts = []
    for f in top:
        tag = (" ⚠️ sync wait" if f.role in ("sync", "sync_memcpy", "sync_ops") else
               " (a thread blocked waiting, not CPU work)" if f.role == "thread_wait" else "")
        own = " (your code)" if f.user else ""
        parts.append(f"{_code(_cut(f.frame, 80))} {_ms(f.self_ns)} "
                     f"({100 * f.share:.1f}%){own}{tag}")
    return ("Host self time (" + _ms(v.cpu.total_ns) + " in scope) goes to: "
            + "; ".join(parts) + ".")


def _key_findings(v: Views, findings: list[Finding]) -> str:
    m = v.metrics
    who = f"{v.engine} " if v.engine else ""
    if m.summary_only:
        return capture_md.summary_key_findings(v)
    if m.cpu_only and v.filter.gpu_elsewhere:  # a host-only slice of a GPU capture
        return (f"No GPU op in this selection ({v.filter.describe()}): the GPU did no traced "
                "work in it, so only the host side is judged here — the CPU view below shows "
                "where host time goes. Widen the filter for the GPU side.")
    if m.cpu_only:
        rt = v.sampled_runtime
        up = rt.share("startup") if rt is not None else None
        red = next((f for f in findings if f.severity == "red"), None)
        said = (f" {rt.summary()}" if rt is not None and rt.shares else "")
        if up is not None and red is not None and red.pattern == "capture-window":
            said += (" The run reports an uncaught error after its start-up "
                     "(**capture-window**): fix the error first, then profile the workload."
                     if rt is not None and rt.share("error_exit") else
                     " The capture is largely start-up (**capture-window**), so it says little "
                     "about the workload's steady state.")
        return (f"A CPU-only {who}capture: only the host side can be judged.{said} The CPU "
                "view below shows where host time goes; re-capture with CUDA activity for the "
                "GPU side.")
    if kernels_md.kernels_only(v):
        return kernels_md.key_findings(v, findings)
    if m.gpu_samples and not m.devices:
        return sampled_md.key_findings(v)
    reds = [f for f in findings if f.severity == "red"]
    if reds and reds[0].pattern == "capture-window":  # issue 15: the capture is start-up
        return (f"A {who}capture of start-up only (GPU busy {m.kernel_busy_pct:.1f}% of its "
                "kernel span): **capture-window** — no step in it is steady state, so its "
                "launch and idle numbers describe warm-up, not the workload.")
    if reds and reds[0].pattern == "late-ranks":  # ranks of one job (render/ranks_md.py)
        return ranks_md.key_findings(v, reds[0].share)
    if reds:
        top = reds[0].details.get("path_top")  # replay/findings.py _on_path: off the path
        on = reds[0].details.get("kernel_path_share")
        if isinstance(top, dict) and isinstance(on, float):
            return (f"A {who}workload whose GPU is busy {m.kernel_busy_pct:.1f}% of its kernel "
                    f"span. The dominant pattern is **{reds[0].pattern}**, but GPU kernels are "
                    f"only {on:.0%} of the step's critical path today ({top['share']:.0%} is "
                    f"{top['cause']}, the capture's replay): faster kernels alone shorten "
                    f"it by at most {on:.0%}; that work must shrink too.")
        return (f"A {who}workload whose GPU is busy {m.kernel_busy_pct:.1f}% of its kernel "
                f"span. The dominant pattern is **{reds[0].pattern}**: "
                f"{_limits(reds[0].pattern)}.")
    yellows = [f for f in findings if f.severity == "yellow"]
    if yellows and _side(yellows[0].pattern) != "GPU kernel":
        # no 🔴, and the largest 🟡 is host or communication work: saying "what is left is
        # kernel time" would contradict it (a kernel-side red demoted off the critical path)
        return (f"A {who}workload whose GPU is busy {m.kernel_busy_pct:.1f}% of its kernel "
                f"span; no 🔴 issue in this capture — the largest is **{yellows[0].pattern}** "
                f"(🟡), on the {_side(yellows[0].pattern)} side.")
    where = ""
    if v.families and v.top_kernels:
        f0, k0 = v.families[0], v.top_kernels[0]
        where = (f": {f0.family} kernels take {100 * f0.share:.1f}% of it, the top kernel "
                 f"{_code(_cut(k0.name, 60))} {100 * k0.share:.1f}%")
    return (f"A {who}workload whose GPU is busy {m.kernel_busy_pct:.1f}% of its kernel span; "
            "no dominant host-side or communication bottleneck in this capture — what is left "
            f"is kernel time itself{where}; "
            + fix_for("kernel-time-left", {"vendor": v.gpu_vendor})
            + ".")


def _side(pattern: str) -> str:
    """Which side a finding's pattern says limits throughput (the key-findings sentence): the
    pattern's declaration says (detectors/declare.py About.side)."""
    return about(pattern).side


def _limits(pattern: str) -> str:
    side = _side(pattern)
    if side == "capture":
        return "the capture itself is the first thing to fix (what it holds is not the workload)"
    return f"the {side} side limits throughput"


def _parts(found: list[Finding], outer: Finding, bullet: str) -> list[str]:
    """The notes whose time lies inside `outer` (the verdict's `within`: one owner per
    nanosecond), with their own fix: the specific change inside the outer one's saving."""
    named = outer.details.get("parts")
    owned = set(named) if isinstance(named, list) else set()
    parts = [f for f in found if f.severity == "info" and f.details.get("within") == outer.pattern
             and f.pattern in owned]
    lines = [f"{bullet}Part of it: {p.title} — **Fix:** {p.fix}" for p in parts]
    return [*lines, ""] if lines and bullet == "- " else lines


Detail = Literal["summary", "full"]


@dataclass
class Part:
    """One section of the recap: `key` names it (HTML picks parts by key)."""

    key: str
    lines: list[str]


def _kind(v: Views) -> str:
    """What the input can show as its view: trace | cpu | ncu | summary | sampled | metrics."""
    if v.metrics.summary_only:
        return "summary"
    if v.metrics.cpu_only:
        return "cpu"
    if kernels_md.kernels_only(v):
        return "ncu"
    if not v.has_trace and v.gpu_metrics.present:
        return "metrics"
    if v.metrics.gpu_samples and not v.metrics.devices:
        return "sampled"
    return "trace"


def _head(a: Analysis, v: Views, detail: Detail) -> list[str]:
    names = ", ".join(inert.name(Path(p).name) for p in v.filter.artifacts)
    who = v.engine or ("GPU-idle selection" if v.filter.gpu_elsewhere else
                       "CPU-only capture" if v.metrics.cpu_only else "GPU workload")
    out = [f"# {who} ({names}) — GPU performance analysis\n"]
    infos = v.artifact_info
    if detail == "full" or len(infos) <= SUMMARY_CAPTURES:
        out += [f"Capture {_code(Path(i.path).name)}: {artifact_line(i)}." for i in infos]
    else:  # one line for many inputs (ranks of a job): each is listed under --detail full
        out.append(f"Captures ({len(infos)}): " + "; ".join(
            f"{_code(Path(i.path).name)}: {artifact_line(i)}" for i in infos[:2])
            + f"; … {len(infos) - 2} more (`--detail full` lists each).")
    out.append(f"Filter: {v.filter.describe()}. Sources: "
               + ", ".join(_code(p) for p in v.filter.artifacts) + ".")
    out += [f"Note: {note}." for note in v.filter.notes]
    out.extend(capture_md.notes_lines(v))  # what each capture did not collect
    out += [f"\n❌ Rejected {_code(r.path)} ({r.status}): {_problems(r.problems)}"
            for r in a.rejected]
    # read in part or doubted: the stderr warning, also in the recap (a file a folder walk
    # skipped is not an input: said on stderr only)
    out += [f"\n⚠️ Read with a warning {_code(r.path)} ({r.status}): {_problems(r.problems)}"
            for r in a.warned if r.status != "skipped"]
    return out


def _verdict(a: Analysis, v: Views, kind: str) -> list[Part]:
    """Key findings, then each 🔴 (title, observation, fix, expected effect, evidence) and
    each 🟡 on one line: the first screen (conventions §4, issue 40)."""
    key = (metrics_md.metrics_only_key_findings(v, a.findings) if kind == "metrics"
           else _key_findings(v, a.findings))
    parts = [Part("key", ["", f"**Key findings** {key}"])]
    reds = [f for f in a.findings if f.severity == "red"]
    yellows = [f for f in a.findings if f.severity == "yellow"]
    if reds:
        out = ["\n## 🔴 Top issues"]
        for i, f in enumerate(reds, 1):
            out += [f"### {i}. {f.title}", f"{f.observation}\n", f"**Fix:** {f.fix}\n"]
            if f.expected_effect:
                out.append(f"**Expected effect:** {f.expected_effect}\n")
            out.extend(_parts(a.findings, f, "- "))
            out.append(f"_Evidence: {'; '.join(str(e) for e in f.evidence)} · {f.rigor} · "
                       f"{f.confidence}_")
        parts.append(Part("issues", out))
    if yellows:
        lines = ["\n## 🟡 Also consider"]
        for f in yellows:
            lines.append(f"- {f.observation} — **Fix:** {f.fix}"
                         + (f" — **Expected effect:** {f.expected_effect}"
                            if f.expected_effect else ""))
            lines.extend(_parts(a.findings, f, "  - "))
        parts.append(Part("consider", lines))
    if not any(f.expected_effect for f in reds + yellows):
        parts.append(Part("impact", ["\n**Expected impact** No lever with a measured upper "
                                     "bound in this capture."]))
    return parts


DRAFT = "Predictions are DRAFT until a same-node A/B (≥3 trials per arm) confirms them."


def _draft(a: Analysis) -> str:
    """The DRAFT sentence, where the recap shows a prediction (a 🔴 or 🟡 with an expected
    effect); a recap without one (the CPU-only example) does not warn about predictions."""
    shown = [f for f in a.findings if f.severity in ("red", "yellow")]
    return f"{DRAFT} " if any(f.expected_effect for f in shown) else ""


def _sync_times(nodes: list[TreeNode]) -> list[int]:
    out: list[int] = []
    for n in nodes:
        out += [n.time_ns] if n.kind == "sync" else _sync_times(n.children)
    return out


def _without_small_syncs(nodes: list[TreeNode], floor_ns: float) -> tuple[list[TreeNode], int]:
    """The tree without sync leaves that blocked the host less than floor_ns (the first
    screen's cut; `--detail full` shows them all), and how many were left out."""
    out: list[TreeNode] = []
    cut = 0
    for n in nodes:
        if n.kind == "sync" and n.time_ns < floor_ns:
            cut += 1
            continue
        kids, k = _without_small_syncs(n.children, floor_ns)
        out.append(replace(n, children=kids) if k else n)
        cut += k
    return out, cut


def _gpu_tree(v: Views, detail: Detail, most: int = TREE_MAX_CHILDREN) -> list[str]:
    # ⚠️ sync points under the frame that called them (issue 15, views/host/tree_ops.py);
    # those whose calling path holds no GPU-view frame stay at the top level
    placed, homeless = tree_ops.place_syncs(tree_ops.merge_repeats(v.gpu.roots),
                                            tree_ops.merge_repeats(v.cpu.roots))
    cut = 0
    if detail == "summary":  # the syncs that block longest always show
        times = sorted(_sync_times(placed) + _sync_times(homeless), reverse=True)
        floor = min(SUMMARY_SYNC_MIN_SHARE * (v.gpu.total_ns or 0),
                    times[SUMMARY_SYNCS_KEPT - 1] if len(times) >= SUMMARY_SYNCS_KEPT
                    else 0)
        placed, cut = _without_small_syncs(placed, floor)
        homeless, k = _without_small_syncs(homeless, floor)
        cut += k
    small = (f"; {cut} sync point{'s' if cut != 1 else ''} that blocked the host under "
             f"{SUMMARY_SYNC_MIN_SHARE:.1%} of the kernel time left out: `--detail full`"
             if cut else "")
    out = ["\n**Observed call tree — GPU view** (" + (
        "L1 sampled: GPU time by stack" if v.gpu.samples and not v.metrics.devices
        else "kernel time under the launching stack") + f"; same filter{small})\n", "```text"]
    sync = [_label(n, 0) for n in sorted(homeless, key=lambda n: -n.time_ns)[:3]]
    out.extend(render_tree(v.gpu, sync, placed, most) or ["(no kernels in scope)"])
    out.append("```")
    return out


def _cpu_tree(v: Views) -> list[str]:
    return ["\n**Observed call tree — CPU view** ("
            + ("L1 sampled: sampled thread time by stack" if v.cpu.samples
               else "host time by stack") + ")\n", "```text",
            *(render_tree(v.cpu) or ["(no host events)"]), "```"]


def _views(a: Analysis, v: Views, kind: str, detail: Detail,
           most: int = TREE_MAX_CHILDREN) -> list[Part]:
    """The input's own view (call tree, or the table that stands for it), then the CPU
    cross-check with the same filter."""
    parts: list[Part] = []
    if kind in ("trace", "sampled"):
        parts.append(Part("tree", _gpu_tree(v, detail, most)))
    elif kind == "cpu":
        parts.append(Part("tree", _cpu_tree(v)))
    elif kind == "ncu":  # no timeline: the per-kernel roofline is the GPU view
        parts.append(Part("ncu_table", ["\n**Per-kernel roofline** (ncu counters, rigor L4; % "
                                        "of the datasheet ceilings in sol_ceilings.yaml)\n",
                                        *kernels_md.table(v.kernels)]))
    elif kind == "summary":  # nsys stats: the per-name totals are all there is
        parts.append(Part("summaries", capture_md.summary_lines(v)))
    elif kind == "metrics":
        parts.append(Part("metrics", ["", *metrics_md.block(v),
                                      "No profiler trace in this bundle: a metrics-only recap "
                                      "(no GPU view, no CPU view)."]))
    parts.append(Part("cpu", ["\n**CPU cross-check** (same filter) " + (
        "No host timeline in this bundle (metrics only)." if kind == "metrics"
        else _cpu_check(v))]))
    return parts


def _detail(a: Analysis, v: Views, kind: str) -> list[Part]:
    """`--detail full`: the analysis in its own order — metrics first, then the GPU view's
    tables (steps, time account, ranks, kernels, rooflines), then the CPU view."""
    parts = [Part("draft", [f"\n{_draft(a).strip()}"] if _draft(a) else []),
             Part("detail_head", ["\n---\n\n## Detail (metrics first, then the GPU and CPU "
                                  "views)"])]
    if kind != "metrics":
        parts.append(Part("metrics", ["", *metrics_md.block(v), *_metrics_block(v)]))
        parts.append(Part("steps", account_md.step_lines(v)))  # steps (issue 15)
        parts.append(Part("account", account_md.account_lines(v)))  # the time account
        parts.append(Part("ranks", ranks_md.table_lines(v)))  # per-rank table
        parts.append(Part("ranks_text", ranks_md.text_lines(v)))  # late ranks, straggler
        if a.fanout:  # analyze --workers/--dask: what the rest of this recap describes
            parts.append(Part("fanout", [f"\nFan-out: {fanout_line(a.fanout)}."]))
    if kind in ("trace", "sampled"):
        parts.append(Part("top_kernels", _top_kernels(v)))
    if kind != "summary":
        parts.append(Part("summaries", capture_md.summary_lines(v)))
    ncu = kernels_md.section(a)
    if kind == "ncu":  # the table is on the first screen: its notes follow here
        ncu = ["\n**Per-kernel roofline — notes**\n", *kernels_md.notes(v.kernels)]
    parts.append(Part("ncu", ncu))
    parts.append(Part("op_roofline", op_roofline_md.section(v)))  # analytic per-op roofline
    parts.append(Part("notes", _notes(a)))
    return [p for p in parts if p.lines]


def _notes(a: Analysis) -> list[str]:
    infos = [f for f in a.findings if f.severity == "info"]
    return ["\n**Notes** " + " ".join(f"{f.title}: {f.observation}" for f in infos)
            ] if infos else []


def _more(a: Analysis, kind: str) -> list[str]:
    """The summary's last line: what `--detail full` adds (said, never computed here)."""
    what = {"trace": "GPU metrics, steps, the time account, top kernels and the rooflines",
            "sampled": "GPU metrics and top kernels", "cpu": "the host metrics",
            "ncu": "each kernel's notes (ceilings, what ncu did not collect, its rules)",
            "summary": "the capture's metrics", "metrics": "notes"}[kind]
    n = len([f for f in a.findings if f.severity == "info"])
    notes = f", {n} note{'s' if n != 1 else ''}" if n and kind != "metrics" else ""
    return [f"\n_{_draft(a)}More: {what}{notes} — `--detail full` (or `--format json` / "
            "`html`)._"]


def parts(a: Analysis, detail: Detail = "full") -> list[Part]:
    """The recap as keyed parts: the verdict first (key findings, 🔴, 🟡, expected effects),
    then the input's view (call tree with ⚠️ syncs) and the CPU cross-check; under
    `detail="full"` the metrics, steps, account, kernel and roofline tables follow."""
    v = a.views
    assert v is not None
    kind = _kind(v)
    head = [Part("head", _head(a, v, detail)), *_verdict(a, v, kind)]
    if detail == "full":
        return head + _views(a, v, kind, detail) + _detail(a, v, kind)
    more = Part("more", _more(a, kind))
    out: list[Part] = []
    for most in range(TREE_MAX_CHILDREN, 1, -1):  # a smaller tree until the screen holds it
        out = [*head, *_views(a, v, kind, detail, most), more]
        if sum(len(ln.split("\n")) for p in out for ln in p.lines) <= SUMMARY_MAX_LINES:
            break
    return out


def render(a: Analysis, detail: Detail = "full") -> str:
    """The recap as Markdown: `summary` is the first screen (`crossview analyze`'s default),
    `full` adds the tables behind it (`--detail full`)."""
    if a.views is None:
        out = ["# crossview — no input could be analyzed\n"]
        out += [f"- ❌ {_code(r.path)}: {_problems(r.problems)}" for r in a.rejected]
        return inert.text("\n".join(out) + "\n")
    # what entered unescaped (findings' prose): no control obeyed
    return inert.text("\n".join(line for p in parts(a, detail) for line in p.lines) + "\n")
