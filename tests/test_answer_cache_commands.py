"""The kept answer of `report`, `kernels` and `whatif` (cli/answers.py, decision 0914), as
`analyze`'s (test_answer_cache.py): a second look at the same bytes with the same command
writes the same bytes, says the same lines and exits with the same status without reading the
capture again; another option, or another byte in a file the answer read (a report's A/B
file), is another answer.

A hit is told apart from a run as in test_answer_cache.py: the capture cache's stores are
removed after the first run; a run reads the capture and keeps a store again, a hit opens
nothing. Real captures: the A100 DDP ResNet trace (replayed by `whatif`), the MI300X vLLM
decode trace (`report`) and the A10G SGEMM Nsight Compute report (`kernels`).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from conftest import SHARED_DATA, copied_capture, run_cli, shared_file
from crossview.cache import answer, entry

A100_DDP = SHARED_DATA / "kineto" / "hta_a100_ddp_resnet_nccl.json.gz"
MI300X = SHARED_DATA / "kineto" / "tracelens_mi300x_vllm_decode_full_graph.json.gz"
ESMM = SHARED_DATA / "ncu" / "esmm_a10g_sgemm_variants.ncu-rep"


def _run(cache: Path, *args: str | Path) -> tuple[int, str, str]:
    r = run_cli("--cache-dir", cache, "-q", *args, env={"CROSSVIEW_NO_CACHE": ""})
    return r.returncode, r.stdout, r.stderr


def _stores(cache: Path) -> list[Path]:
    return list((cache / entry.STORES).glob(f"*{entry.SUFFIX}"))


def _answers(cache: Path) -> int:
    return len(list((cache / answer.ANSWERS).glob("*.crossview.json")))


def _forget_stores(cache: Path) -> None:
    shutil.rmtree(cache / entry.STORES, ignore_errors=True)


def test_whatif_second_look_is_the_kept_prediction(tmp_path: Path) -> None:
    trace = copied_capture(A100_DDP, tmp_path)
    cache = tmp_path / "cache"
    first = _run(cache, "whatif", trace, "--lever", "cuda-graphs", "-f", "json")
    assert first[0] == 0, first[2]
    got = json.loads(first[1])
    assert got["levers"] == ["cuda-graphs"] and got["median"]["measured_step_ns"] > 0
    assert _answers(cache) == 1
    _forget_stores(cache)
    again = _run(cache, "whatif", trace, "--lever", "cuda-graphs", "-f", "json")
    assert again == first
    assert not _stores(cache)  # nothing was read: the prediction was kept
    # another lever is another answer, replayed from the capture
    other = _run(cache, "whatif", trace, "--lever", "bucket-grads", "-f", "json")
    assert other[0] == 0 and json.loads(other[1])["levers"] == ["bucket-grads"]
    assert _stores(cache) and _answers(cache) == 2


def test_report_second_look_is_the_kept_page(tmp_path: Path) -> None:
    trace = copied_capture(MI300X, tmp_path)
    cache = tmp_path / "cache"
    page = tmp_path / "first.html"
    first = _run(cache, "report", trace, "-o", page)
    assert first[0] == 0 and page.read_text().startswith("<!")
    _forget_stores(cache)
    # -o elsewhere is the same answer, written there
    again_page = tmp_path / "again.html"
    again = _run(cache, "report", trace, "-o", again_page)
    assert again[0] == 0 and again_page.read_bytes() == page.read_bytes()
    assert not _stores(cache)


def test_a_reports_ab_file_is_part_of_its_key_and_its_status_is_kept(tmp_path: Path
                                                                      ) -> None:
    """An empty, then a truncated A/B file beside a sound capture: each is refused in one
    line and the page is written without its panel (exit 2); the second look at the same
    bytes says the same line and exits 2 again; the edited file is another answer."""
    trace = copied_capture(MI300X, tmp_path)
    cache = tmp_path / "cache"
    ab = tmp_path / "ab.json"
    ab.write_text("")
    page = tmp_path / "r.html"
    first = _run(cache, "report", trace, "--ab", ab, "-o", page)
    assert first[0] == 2 and "ab.json" in first[2] and page.exists()
    _forget_stores(cache)
    assert _run(cache, "report", trace, "--ab", ab, "-o", page) == first
    assert not _stores(cache)
    ab.write_text('{"metric": ')
    edited = _run(cache, "report", trace, "--ab", ab, "-o", page)
    assert edited[0] == 2 and "ab.json" in edited[2]
    assert _stores(cache) and _answers(cache) == 2  # read again: another answer


def test_kernels_second_look_is_the_kept_table(tmp_path: Path) -> None:
    rep = copied_capture(ESMM, tmp_path)
    cache = tmp_path / "cache"
    first = _run(cache, "kernels", rep)
    assert first[0] == 0 and first[1].startswith("# Per-kernel roofline")
    _forget_stores(cache)
    again = _run(cache, "kernels", rep)
    assert again == first
    assert not _stores(cache)
    # another format is another answer
    js = _run(cache, "kernels", rep, "-f", "json")
    assert js[0] == 0 and json.loads(js[1]) and _stores(cache)


WORKERS0 = SHARED_DATA / "kineto" / "kineto_v100_resnet50_workers0.pt.trace.json.gz"
WORKERS4 = SHARED_DATA / "kineto" / "kineto_v100_resnet50_workers4.pt.trace.json.gz"


def test_diff_second_look_keeps_the_gates_line_and_status(tmp_path: Path) -> None:
    """The V100 ResNet-50 runs with 4 DataLoader workers, then without: the median step grows
    122.590 → 152.536 ms (`crossview diff` read by hand), past a 1 % gate beyond the noise:
    exit 1 and the gate's error line, kept and said again on the second look."""
    a, b = copied_capture(WORKERS4, tmp_path / "a"), copied_capture(WORKERS0, tmp_path / "b")
    cache = tmp_path / "cache"
    first = _run(cache, "diff", a, b, "--fail-on-regression", "1")
    assert first[0] == 1, first[2]
    assert "--fail-on-regression 1: median step 122.590 → 152.536 ms" in first[2]
    _forget_stores(cache)
    assert _run(cache, "diff", a, b, "--fail-on-regression", "1") == first
    assert not _stores(cache)


MEGATRON = SHARED_DATA / "kineto" / "megatron_tp8_a100"


def test_a_fanned_out_analyze_keeps_its_answer(tmp_path: Path) -> None:
    """`analyze --workers 2` on the 8 Megatron ranks: its answer (the fan-out's own recap) is
    kept; the second look reads it back — the entry is the same file, not written again (a
    run writes a new one under a temp name and renames it: another inode) — and the
    in-process analysis of the same folder is another answer."""
    folder = tmp_path / "job"
    folder.mkdir()
    for f in sorted(shared_file(MEGATRON).glob("rank-*.json.gz")):
        shutil.copyfile(f, folder / f.name)
    cache = tmp_path / "cache"
    first = _run(cache, "analyze", folder, "--workers", "2", "-f", "json")
    assert first[0] == 0, first[2]
    assert len(json.loads(first[1])["artifacts"]) == 8  # every rank file read
    [kept] = (cache / answer.ANSWERS).glob("*.crossview.json")
    inode = kept.stat().st_ino
    assert _run(cache, "analyze", folder, "--workers", "2", "-f", "json") == first
    assert kept.stat().st_ino == inode  # read, not written again
    alone = _run(cache, "analyze", folder, "-f", "json")
    assert alone[0] == 0 and _answers(cache) == 2
