# Synthetic edge cases (a hand-built trace with odd kernel names, built in tmp_path) for output
# shapes no public sample in ../shared/data pins down; the other inputs are the repo's CPU-only
# example capture and, when present, the real B200 capture in ../shared/data.
"""The recap (markdown) and JSON contract of ``crossview analyze`` on real and synthetic input.

Checks the recap template of ../shared/docs/conventions.md §4: section order, at most 3 red
issues each with a **Fix:**, at most 2 yellow bullets, numbers with units in the metrics block,
kernel names reproduced as recorded (shortened only with a trailing "…"). Issue 40: the verdict
comes first (key findings, 🔴, 🟡), then the GPU view and the CPU cross-check; the metrics
and tables follow under `--detail full`, in the order of the analysis (metrics first).
"""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from conftest import SHARED_DATA, SHARED_DATA_ABSENT, run_cli

REPO = Path(__file__).resolve().parents[1]
CPU_EXAMPLE = REPO / "examples" / "cpu_tiny_decode.pt.trace.json.gz"
DATA_DIR = SHARED_DATA
B200 = DATA_DIR / "kineto" / "tracelens_b200_vllm_eager_prefill_tp8.json.gz"
SKIP_REASON = SHARED_DATA_ABSENT
CLI_TIMEOUT_S = 300

SECTIONS = ("**Key findings**", "## 🔴 Top issues", "**Observed call tree — GPU view**",
            "**CPU cross-check**")
DETAIL = ("**GPU metrics**", "**Steps**", "**Time account", "**Top kernels**")


@cache
def cli(path: str, fmt: str = "md", detail: str = "summary") -> str:
    proc = run_cli("analyze", path, "--format", fmt, "--detail", detail,
                   timeout=CLI_TIMEOUT_S)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "Traceback" not in proc.stderr + proc.stdout
    return proc.stdout


def b200() -> Path:
    if not B200.is_file():
        pytest.skip(SKIP_REASON)
    return B200


# --------------------------------------------------------------------------- text helpers


def code_block_after(md: str, heading: str) -> list[str]:
    """Lines of the first ```text block after `heading`."""
    at = md.index(heading)
    start = md.index("```text\n", at) + len("```text\n")
    end = md.index("```", start)
    return md[start:end].splitlines()


def section(md: str, heading: str) -> str:
    """From `heading` to the next '## ' heading or the next bold paragraph heading."""
    at = md.index(heading) + len(heading)
    nxt = [i for i in (md.find("\n## ", at), md.find("\n**Expected impact**", at),
                       md.find("\n**Notes**", at)) if i >= 0]
    return md[at: min(nxt) if nxt else len(md)]


def metrics_block(md: str) -> list[str]:
    at = md.index("**GPU metrics**")
    end = md.find("\n\n", at)
    return md[at: end if end >= 0 else len(md)].splitlines()


_NOISE = (
    re.compile(r"\(trace: [^)]*\)"),  # the evidence path
    re.compile(r"`[^`]*`"),  # quoted names
    re.compile(r"\S+\.json(?:\.gz)?"),  # file names
)
_NUMBER = re.compile(r"(?<![\w.,])\d[\d,]*(?:\.\d+)?(?![\w.,]*\w)")
_UNIT_AFTER = re.compile(
    r"\s*(?:%|ms\b|µs\b|ns\b|s\b|[KMGT]i?B\b|B\b|GB/s\b|kernels?\b|launch calls?\b|"
    r"graph launches?\b|calls?\b|copies\b|events\b|frames\b)")
_ALLOWED_BEFORE = re.compile(r"(?:×|device |stream |rank |#)$")


def bare_numbers(lines: list[str]) -> list[str]:
    """Numbers in `lines` that carry no unit (nor a × count or an id prefix)."""
    bad: list[str] = []
    for line in lines:
        text = line
        for rx in _NOISE:
            text = rx.sub(" ", text)
        text = text.replace("*", "")
        for m in _NUMBER.finditer(text):
            if _UNIT_AFTER.match(text, m.end()) or _ALLOWED_BEFORE.search(text[: m.start()]):
                continue
            bad.append(f"{m.group()!r} in {line!r}")
    return bad


def shown_kernel_names(tree: list[str]) -> list[str]:
    """Kernel names in rendered tree lines: '→ NAME  [...]' or '→ NAME  ×N'."""
    out = []
    for line in tree:
        for m in re.finditer(r"→ (.+?)  (?:\[|×)", line):
            out.append(m.group(1))
    return out


def matches_recorded(shown: str, recorded: set[str]) -> bool:
    if shown in recorded:
        return True
    if shown.endswith("…"):
        prefix = shown[:-1]
        return len(prefix) >= 10 and any(r.startswith(prefix) for r in recorded)
    return False


def appears_as_recorded(name: str, md: str) -> bool:
    """`name` is in `md` in full, or as a prefix (≥ 20 chars) followed by '…'."""
    if name in md:
        return True
    return any(name[:cut] + "…" in md for cut in range(len(name) - 1, 19, -1))


def trace_kernels(path: Path) -> Counter[str]:
    with gzip.open(path, "rt") as f:
        doc = json.load(f)
    t: Counter[str] = Counter()
    for e in doc["traceEvents"]:
        if e.get("ph") == "X" and e.get("cat") in ("kernel", "Kernel"):
            t[e["name"]] += int(round(float(e.get("dur", 0)) * 1000))
    return t


# --------------------------------------------------------------------------- CPU-only example


def test_cpu_example_markdown() -> None:
    md = cli(str(CPU_EXAMPLE))
    assert "CPU-only" in md
    assert "**Observed call tree — GPU view**" not in md
    tree = code_block_after(md, "**Observed call tree — CPU view**")
    assert tree, "empty CPU tree"
    joined = "\n".join(tree)
    assert "├──" in joined and "└──" in joined
    for line in tree:
        assert re.match(r"^(?:[│ ]   )*(?:├── |└── )\S", line), line
    # the last sibling of the top level closes with └──
    top = [ln for ln in tree if ln.startswith(("├── ", "└── "))]
    assert top[-1].startswith("└── ")
    # issue 40: the verdict first, then the view and the CPU cross-check
    assert md.index("**Key findings**") < md.index("**CPU cross-check**")


def test_cpu_example_frames_shown_without_object_addresses() -> None:
    """Decision 0911: the example's tree holds `<built-in method mean of Tensor object at
    0x7ff6f3076f30>` (read from the trace below); the recap shows it without the address,
    which changes every run, while the JSON keeps the name as recorded."""
    with gzip.open(CPU_EXAMPLE, "rt") as f:
        names = {e.get("name", "") for e in json.load(f)["traceEvents"]}
    recorded = sorted(n for n in names if re.search(r" object at 0x[0-9a-f]+>$", n))
    assert "<built-in method mean of Tensor object at 0x7ff6f3076f30>" in recorded
    md = cli(str(CPU_EXAMPLE))
    assert not re.search(r"0x[0-9a-fA-F]{4,}", md)
    assert "<built-in method mean of Tensor object>  [" in md
    doc = cli(str(CPU_EXAMPLE), "json")
    assert "<built-in method mean of Tensor object at 0x7ff6f3076f30>" in doc


def test_draft_footer_only_where_the_recap_predicts() -> None:
    """The CPU-only example has no lever ("No lever with a measured upper bound"): its footer
    does not warn about predictions it does not make. The B200 recap's 🔴 carries a replayed
    effect: its footer says predictions stay DRAFT until an A/B."""
    md = cli(str(CPU_EXAMPLE))
    assert "No lever with a measured upper bound in this capture." in md
    assert "Predictions are DRAFT" not in md
    assert md.rstrip().splitlines()[-1].startswith("_More: the host metrics")
    full = cli(str(CPU_EXAMPLE), detail="full")
    assert "Predictions are DRAFT" not in full
    b = cli(str(b200()))
    assert "**Expected effect:** Replay" in b
    assert b.rstrip().splitlines()[-1].startswith("_Predictions are DRAFT until a same-node A/B")


def test_cpu_example_json() -> None:
    doc = json.loads(cli(str(CPU_EXAMPLE), "json"))
    assert doc["metrics"]["cpu_only"] is True
    assert doc["metrics"]["kernel_count"] == 0
    assert doc["cpu_view"]["total_ns"] > 0
    assert doc["cpu_view"]["roots"]
    assert doc["gpu_view"]["total_ns"] == 0 and doc["gpu_view"]["roots"] == []
    assert [a["status"] for a in doc["artifacts"]] == ["ok"]
    # self times add up to the view total
    def self_sum(nodes: list[dict[str, Any]]) -> int:
        return sum(n["self_ns"] + self_sum(n["children"]) for n in nodes)
    assert self_sum(doc["cpu_view"]["roots"]) == doc["cpu_view"]["total_ns"]


# --------------------------------------------------------------------------- B200 recap


def test_b200_sections_in_template_order() -> None:
    md = cli(str(b200()))
    pos = [md.find(s) for s in SECTIONS]
    assert all(p >= 0 for p in pos), dict(zip(SECTIONS, pos, strict=True))
    assert pos == sorted(pos), dict(zip(SECTIONS, pos, strict=True))
    assert md.startswith("# ")
    assert not any(s in md for s in DETAIL), "a table of --detail full on the first screen"
    # --detail full: the same first screen, then metrics first, steps, account, kernels
    full = cli(str(b200()), detail="full")
    assert full.startswith(md[: md.index("**Observed call tree")])  # the tree: all of it
    pos = [full.find(s) for s in SECTIONS + DETAIL]
    assert all(p >= 0 for p in pos) and pos == sorted(pos), dict(zip(SECTIONS + DETAIL, pos,
                                                                     strict=True))


def test_b200_top_issues_have_fixes() -> None:
    md = cli(str(b200()))
    top = section(md, "## 🔴 Top issues")
    issues = [ln for ln in top.splitlines() if ln.startswith("### ")]
    assert 1 <= len(issues) <= 3, issues
    assert md.count("\n### ") == len(issues)  # no red issue outside the section
    chunks = re.split(r"^### .*$", top, flags=re.M)[1:]
    for head, body in zip(issues, chunks, strict=True):
        fixes = [ln for ln in body.splitlines() if ln.startswith("**Fix:**")]
        assert len(fixes) == 1, (head, body)
        assert len(fixes[0]) > len("**Fix:** ") + 10
    assert [int(re.match(r"### (\d+)\.", h).group(1)) for h in issues] == list(
        range(1, len(issues) + 1))


def test_b200_at_most_two_yellow_bullets() -> None:
    md = cli(str(b200()))
    if "🟡" not in md:
        return
    assert md.count("## 🟡") == 1
    bullets = [ln for ln in section(md, "## 🟡 Also consider").splitlines()
               if ln.startswith("- ")]
    assert 1 <= len(bullets) <= 2, bullets
    for b in bullets:
        assert "**Fix:**" in b, b


def test_b200_metrics_numbers_carry_units() -> None:
    md = cli(str(b200()), detail="full")
    block = metrics_block(md)
    assert len(block) >= 3
    assert bare_numbers(block) == []
    # the unit check itself catches a bare number
    assert bare_numbers(["- Idle 72.57: host wait 3 ms"]) == [
        "'72.57' in '- Idle 72.57: host wait 3 ms'"]


def test_b200_kernel_names_as_recorded() -> None:
    path = b200()
    md = cli(str(path), detail="full")  # the top-kernel table is behind the first screen
    recorded = trace_kernels(path)
    # every kernel name the GPU-view tree shows is a recorded name (or its prefix + "…")
    tree = code_block_after(md, "**Observed call tree — GPU view**")
    for shown in shown_kernel_names(tree):
        assert matches_recorded(shown, set(recorded)), shown
    # the three kernels with the most time are named in the recap, exactly as recorded
    for name, _ in recorded.most_common(3):
        assert appears_as_recorded(name, md), name


def test_b200_json_matches_markdown_numbers() -> None:
    path = b200()
    doc = json.loads(cli(str(path), "json"))
    md = cli(str(path), detail="full")
    m = doc["metrics"]
    assert f"{m['kernel_count']:,} kernels" in md
    assert f"**{m['kernel_busy_pct']:.1f}%**" in md


# --------------------------------------------------------------------------- synthetic names


LONG = ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
        "std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)")
ODD = "k<*_x_*>|pipe`tick"
SHORT = "ampere_sgemm_128x64_nn"


def names_trace(tmp: Path) -> Path:
    ev: list[dict[str, Any]] = []
    for i, (name, dur) in enumerate([(LONG, 40), (ODD, 30), (SHORT, 30)] * 2):
        ts = 1000 + 100 * i
        op = ["aten::fill_", "aten::odd", "aten::mm"][i % 3]
        ev.append({"ph": "X", "cat": "cpu_op", "name": op, "pid": 1, "tid": 1, "ts": ts,
                   "dur": 10, "args": {}})
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1,
                   "tid": 1, "ts": ts + 2, "dur": 5, "args": {"correlation": i}})
        ev.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7,
                   "ts": ts + 20, "dur": dur,
                   "args": {"correlation": i, "device": 0, "stream": 7}})
    path = tmp / "names.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": ev}))
    return path


def test_synthetic_kernel_names_in_tree(tmp_path: Path) -> None:
    md = cli(str(names_trace(tmp_path)), detail="full")
    tree = code_block_after(md, "**Observed call tree — GPU view**")
    shown = shown_kernel_names(tree)
    recorded = {LONG, ODD, SHORT}
    assert shown, tree
    for s in shown:
        assert matches_recorded(s, recorded), s
    for name in recorded:
        assert appears_as_recorded(name, "\n".join(tree)), (name, tree)
    assert len(LONG) > 100  # the long one can only appear shortened with "…"
    assert any(s.endswith("…") and LONG.startswith(s[:-1]) for s in shown) or LONG in md
    assert bare_numbers(metrics_block(md)) == []


# -o onto something that is not a regular file. A temp-then-rename there replaced the device
# node itself (as root, `-o /dev/null` turned /dev/null into a plain file for every later
# process). A FIFO in tmp_path stands in for /dev/null so a regression cannot harm the machine.
def test_output_to_fifo_writes_in_place(tmp_path: Path) -> None:
    import os
    import stat
    import threading

    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    proc = run_cli("analyze", CPU_EXAMPLE, "--format", "json", "-o", fifo,
                   timeout=CLI_TIMEOUT_S)
    reader.join(timeout=30)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)  # still the FIFO, not a plain file
    assert json.loads(got[0])["artifacts"]  # the whole JSON went through it
    assert "overwrote" not in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.fifo"]  # no sidecar, no temp


def test_output_dash_is_stdout(tmp_path: Path) -> None:
    proc = run_cli("analyze", CPU_EXAMPLE, "--format", "json", "-o", "-", cwd=tmp_path,
                   timeout=CLI_TIMEOUT_S)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout)["artifacts"]
    assert list(tmp_path.iterdir()) == []  # no file named "-"
