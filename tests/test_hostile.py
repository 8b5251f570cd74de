"""Hostile-input regression corpus (issue 18): every case of tests/hostile/corpus.py, its bad
input beside the good MI300X capture, through the reading + analysis API in-process.

Contract per case: no exception but a CrossviewError (no RecursionError, OverflowError,
MemoryError, ArrowTypeError, … reaching the caller); the good capture is still analyzed
(425 kernels — counted by hand in test_mcp.py); the bad input is flagged — status not "ok"
(refused, partial or skipped) — unless the case is a plausible input (`ok=True`: a 1,200-deep
stack, an unknown deep field), which must be read with status ok. The bombs (`big=True`)
are left to `python -m tests.hostile.run --big`; the ones cheap enough to build run here too.
CLI-level contracts (one line per bad file, escaped names) are at the end.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from conftest import run_cli
from crossview.analysis import analyze
from crossview.errors import CrossviewError
from crossview.sources import guard
from hostile.corpus import CASES, GOOD_KINETO, Case

GOOD_KERNELS = 425

pytestmark = pytest.mark.skipif(not GOOD_KINETO.is_file(), reason="../shared/data absent")


@pytest.fixture(autouse=True, scope="module")
def _deep() -> None:
    guard.deep_stacks()  # as the CLI and MCP server run (input_limits.yaml)


def _inputs(case: Case, d: Path) -> tuple[Path, list[Path]]:
    bad = case.make(d)
    good = d / GOOD_KINETO.name
    good.write_bytes(GOOD_KINETO.read_bytes())
    return bad, [d] if bad.is_dir() or bad.name == "bundle.yaml" else [bad, good]


QUICK = [c for c in CASES if not c.big and c.name not in ("yaml_bomb",)]


@pytest.mark.parametrize("case", QUICK, ids=[c.name for c in QUICK])
def test_case_flagged_and_good_capture_still_analyzed(case: Case, tmp_path: Path) -> None:
    try:
        bad, args = _inputs(case, tmp_path)
    except FileNotFoundError:
        pytest.skip("its real base capture is absent")
    try:
        result = analyze(args)
    except CrossviewError as e:  # allowed, but must not happen with a good file beside
        pytest.fail(f"the whole analysis was refused: {e}")
    by_name = {Path(a.path).name: a for a in result.artifacts}
    assert result.views is not None
    mine = [a for a in result.artifacts if Path(a.path).name != GOOD_KINETO.name]
    if case.ok:
        # issue 40: a sound capture of another run (its own clock, or a copy: the same rank
        # twice) is never merged with the good one — one of them is analyzed, the other set
        # apart with one line naming --each; each is read whole (status ok) on its own
        runs = [a for a in result.artifacts if a.status == "other-run"]
        assert [a.status for a in mine] == ["ok"] or (
            len(runs) == 1 and "--each" in runs[0].problems[0]), [a.to_dict() for a in mine]
        assert [a.status for a in analyze([bad]).artifacts] == ["ok"]
        return
    # a doubted or partial capture never pushes the sound one out of the recap
    assert by_name[GOOD_KINETO.name].status == "ok"
    assert result.views.metrics.kernel_count >= GOOD_KERNELS
    assert mine, "the bad input was skipped without a word"
    for a in mine:  # refused, read in part, or read whole with a doubt the reader says
        assert a.status != "ok" or a.problems, a.to_dict()
        assert a.problems and all(p.strip() for p in a.problems)
        assert all("\n" not in p for p in a.problems)


def test_dur_negative_is_a_counted_skip_not_idle(tmp_path: Path) -> None:
    """Kineto: 2 kernels with dur -5 µs → both skipped and said; never '0% busy'."""
    bad, _ = _inputs(next(c for c in CASES if c.name == "k_dur_negative"), tmp_path)
    result = analyze([bad])
    rep = result.artifacts[0]
    assert rep.status == "partial"
    assert "2 of 2 GPU event(s) with a missing, negative or non-finite `dur` were skipped" \
        in rep.problems[0]


def test_nsys_text_start_rows_skipped_and_counted(tmp_path: Path) -> None:
    """nsys: kernel rows whose start became text ('123 ns') are left out and counted; the
    rest keep their integer times (the view counts only integer-typed rows)."""
    import sqlite3

    case = next(c for c in CASES if c.name == "nsys_start_text")
    try:
        bad = case.make(tmp_path)
    except FileNotFoundError:
        pytest.skip("nsys capture absent")
    con = sqlite3.connect(bad)
    n_text, n_all = con.execute("SELECT sum(typeof(start) = 'text'), count(*) FROM "
                                "CUPTI_ACTIVITY_KIND_KERNEL").fetchone()
    con.close()
    result = analyze([bad])
    rep = result.artifacts[0]
    assert rep.status == "partial"
    assert f"{n_text:,} row(s) of CUPTI_ACTIVITY_KIND_KERNEL skipped" in rep.problems[0]
    assert result.views is not None
    assert result.views.metrics.kernel_count == n_all - n_text


def test_yaml_bomb_bundle_inventoried_without_it(tmp_path: Path) -> None:
    from crossview.synthesis import bundle, inventory

    case = next(c for c in CASES if c.name == "yaml_bomb")
    _inputs(case, tmp_path)
    b = bundle.load(tmp_path)
    assert any("billion laughs" in w for w in b.warnings)
    inv = inventory.take(b)
    assert [e.valid for e in inv.entries if e.path == GOOD_KINETO.name] == [True]


def test_partial_artifact_is_not_a_valid_synthesis_source(tmp_path: Path) -> None:
    from crossview.synthesis import bundle, inventory

    _inputs(next(c for c in CASES if c.name == "k_dur_negative"), tmp_path)
    inv = inventory.take(bundle.load(tmp_path))
    e = next(e for e in inv.entries if e.path == "dur_neg.json")
    # its two kernels were skipped (negative dur): no GPU events left, and read in part
    assert not e.valid and [p.problem for p in e.problems] == ["no-gpu-events", "partial"]


def test_archive_member_budget_refused_before_extracting(tmp_path: Path, monkeypatch) -> None:
    import tarfile

    from crossview.sources import archive

    monkeypatch.setattr(archive, "MAX_MEMBERS", 50)
    p = tmp_path / "many.tar"
    with tarfile.open(p, "w") as t:
        for i in range(51):
            info = tarfile.TarInfo(f"m{i}.txt")
            t.addfile(info)
    with pytest.raises(CrossviewError, match="more than 50 members"):
        archive.extract(p)


def test_dead_process_temp_folders_swept(tmp_path: Path, monkeypatch) -> None:
    import tempfile

    from crossview.sources import tempdirs

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(tempdirs, "_swept", False)
    dead = tmp_path / "crossview-x999999999-bundle.tar-abc"
    dead.mkdir()
    (dead / "x.json").write_text("{}")
    mine = Path(tempdirs.make("t"))  # sweeps first
    assert not dead.exists() and mine.exists()


# --------------------------------------------------------------------------- CLI contracts


def _cli(*args: str, quiet: bool = True) -> subprocess.CompletedProcess[str]:
    return run_cli(*(["--quiet"] if quiet else []), *args, timeout=120)


def test_name_with_newline_and_ansi_cannot_forge_a_line(tmp_path: Path) -> None:
    bad = next(c for c in CASES if c.name == "bad_name").make(tmp_path)
    good = tmp_path / GOOD_KINETO.name
    good.write_bytes(GOOD_KINETO.read_bytes())
    proc = _cli("analyze", str(bad), str(good))
    lines = proc.stderr.splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert "\\n" in lines[0] and "\\x1b" in lines[0] and "\x1b" not in proc.stderr


def test_fifo_and_dev_zero_refused_fast(tmp_path: Path) -> None:
    fifo = next(c for c in CASES if c.name == "fifo").make(tmp_path)
    zero = next(c for c in CASES if c.name == "dev_zero").make(tmp_path)
    good = tmp_path / GOOD_KINETO.name
    good.write_bytes(GOOD_KINETO.read_bytes())
    proc = _cli("analyze", "--format", "json", str(tmp_path))
    err = proc.stderr.splitlines()
    assert proc.returncode == 2
    assert any(fifo.name in e and "not a regular file (a FIFO)" in e for e in err), err
    assert any(zero.name in e and "a character device" in e for e in err), err
    assert '"kernel_count": 425' in proc.stdout


def test_output_never_becomes_an_input(tmp_path: Path) -> None:
    good = tmp_path / GOOD_KINETO.name
    good.write_bytes(GOOD_KINETO.read_bytes())
    out = tmp_path / "timeline.json"
    assert _cli("export", "--to", "perfetto", "-o", str(out), str(tmp_path)).returncode == 0
    again = _cli("export", "--to", "perfetto", "-o", str(out), str(tmp_path), quiet=False)
    assert again.returncode == 0 and f"overwrote {out}" in again.stderr
    proc = _cli("analyze", "--format", "json", str(tmp_path))
    assert proc.returncode == 0 and '"kernel_count": 425' in proc.stdout  # not 850
    onto = _cli("analyze", "-o", str(good), str(tmp_path))
    assert onto.returncode == 2 and "that is an input of this run" in onto.stderr
    assert good.read_bytes() == GOOD_KINETO.read_bytes()


def test_lake_after_a_crash_torn_line_part_and_orphans(tmp_path: Path) -> None:
    """A killed ingest leaves a torn manifest line, a `.part` file and an unlisted Parquet
    file: reads ignore the torn line (a warning), the next ingest removes all three and
    commits after them; the lake's kernel count is the good trace's 425."""
    from crossview.analysis import analyze_lake
    from crossview.lake import manifest
    from crossview.lake.ingest import ingest

    lake = tmp_path / "lake"
    ingest([GOOD_KINETO], lake)
    n_lines = len((lake / manifest.MANIFEST).read_text().splitlines())
    with open(lake / manifest.MANIFEST, "a") as f:
        f.write('{"artifact_id": 9, "path": "x", "sha')  # torn
    part = lake / "gpu_ops" / ".x.parquet.999999999.part"
    part.write_bytes(b"half")
    orphan = lake / "gpu_ops" / "orphan.parquet"
    orphan.write_bytes(b"PAR1")
    assert len(manifest.read(lake)) == n_lines  # the torn line ignored, not fatal
    assert analyze_lake(lake).views.metrics.kernel_count == GOOD_KERNELS  # type: ignore[union-attr]
    other = tmp_path / "other.pt.trace.json"
    other.write_bytes(next(c for c in CASES if c.name == "k_deep_ops_ok").make(tmp_path)
                      .read_bytes())
    ingest([other], lake)
    assert not part.exists() and not orphan.exists()
    lines = (lake / manifest.MANIFEST).read_text().splitlines()
    assert len(lines) == n_lines + 1 and all(ln.endswith("}") for ln in lines)


def test_own_outputs_are_not_listed_in_an_inventory(tmp_path: Path) -> None:
    """A user-named export (recorded in .crossview-outputs), a marked default-named one and
    the sidecar itself are crossview's, not the bundle's: not read, not in other_files; a
    file of the user's that crossview does not read still is."""
    import json

    (tmp_path / GOOD_KINETO.name).write_bytes(GOOD_KINETO.read_bytes())
    (tmp_path / "notes.md").write_text("what was run\n")
    assert _cli("export", "--to", "perfetto", "-o", str(tmp_path / "timeline.json"),
                str(tmp_path)).returncode == 0
    (tmp_path / "trace.crossview.perfetto.json").write_text("{}")
    assert (tmp_path / ".crossview-outputs").read_text() == "timeline.json\n"
    proc = _cli("inventory", "--format", "json", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    inv = json.loads(proc.stdout)
    assert inv["other_files"] == ["notes.md"]
    assert [a["path"] for a in inv["artifacts"]] == [GOOD_KINETO.name]
