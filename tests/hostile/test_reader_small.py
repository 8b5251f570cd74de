"""The small items of issue 43 on the readers' side: an unreadable file is one line (not
Typer's usage box), NVIDIA's native loader cannot print its own line on crossview's stderr,
a damaged .ncu-rep that loads nothing says so, and pool workers end with their parent when
it is killed. Synthetic inputs, except the damaged .ncu-rep (the cudacode RTX 2080 Ti report
with bytes overwritten) and the ingested traces (Megatron ranks from ../shared/data).
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import SHARED_DATA, cli_command, cli_env, run_cli
from hostile.corpus import GOOD_KINETO

NCU_REP = SHARED_DATA / "ncu" / "cudacode_rtx2080ti_two_kernels.ncu-rep"
RANKS = SHARED_DATA / "kineto" / "megatron_tp8_a100"


def _as_another_user(args: list[str]) -> list[str]:
    """Root reads a mode-000 file anyway: drop the capabilities that let it (as another
    user would be refused)."""
    if os.geteuid() != 0:
        return args
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: cannot be refused a file")
    caps = "-dac_override,-dac_read_search"
    return ["setpriv", "--bounding-set", caps, "--inh-caps", caps, *args]


def test_mode_000_file_is_one_line_and_the_rest_answers(tmp_path: Path) -> None:
    if not GOOD_KINETO.is_file():
        pytest.skip("../shared/data absent")
    secret = tmp_path / "secret.pt.trace.json"
    secret.write_text('{"traceEvents": []}')
    secret.chmod(0)
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "x.pt.trace.json").write_text("{}")
    locked.chmod(0)
    good = tmp_path / GOOD_KINETO.name
    good.write_bytes(GOOD_KINETO.read_bytes())
    try:
        for cmd in (["analyze", "--format", "json", str(secret), str(good)],
                    ["analyze", "--format", "json", str(tmp_path)]):
            proc = subprocess.run(_as_another_user(cli_command("--quiet", *cmd)),
                                  capture_output=True, text=True, env=cli_env(), timeout=120)
            err = proc.stderr.splitlines()
            assert proc.returncode == 2 and '"kernel_count": 425' in proc.stdout, proc.stderr
            assert f"crossview: error: {secret}: cannot read: Permission denied" in err
            assert "Usage:" not in proc.stderr
            if cmd[-1] == str(tmp_path):  # a folder that cannot be listed is said too
                assert (f"crossview: error: {locked}: cannot read: Permission denied (a "
                        "folder: its files cannot be listed)") in err
    finally:
        locked.chmod(0o755)


def test_no_path_parameter_checks_readability() -> None:
    """Typer's `readable=True` default is turned off on every command's path parameters."""
    from crossview.cli.app import _command

    cmd = _command()
    seen = 0
    stack = [cmd]
    while stack:
        g = stack.pop()
        for p in g.params:
            if hasattr(p.type, "readable"):
                seen += 1
                assert p.type.readable is False, (g.name, p.name)
        stack.extend(getattr(g, "commands", {}).values())
    assert seen >= 20


def _damaged(tmp: Path, seed: int) -> Path:
    """The real report with three 4-byte runs overwritten (its container still tiles)."""
    b = bytearray(NCU_REP.read_bytes())
    r = random.Random(seed)
    for _ in range(3):
        off = r.randrange(100, len(b) - 10)
        b[off:off + 4] = r.randbytes(4)
    p = tmp / f"damaged{seed}.ncu-rep"
    p.write_bytes(bytes(b))
    return p


def test_native_loader_line_does_not_leak_on_stderr(tmp_path: Path) -> None:
    """Seed 106 breaks a ProfileResult message: the protobuf library printed "WARNING: All
    log messages before absl::InitializeLog()…" and "E0000 … message_lite.cc:195] Can't
    parse message …" on fd 2. Now: one crossview warning naming the file and what the
    loader said."""
    pytest.importorskip("ncu_report", reason="ncu-report not installed")
    if not NCU_REP.is_file():
        pytest.skip("ncu report absent")
    bad = _damaged(tmp_path, 106)
    proc = run_cli("--quiet", "kernels", "--format", "json", bad, timeout=120)
    lines = proc.stderr.splitlines()
    assert all(ln.startswith("crossview: ") for ln in lines), lines
    assert len(lines) == 1 and lines[0].startswith(
        f"crossview: warning: {bad}: partial: ncu_report could not parse part of it: "), lines
    assert "missing required fields" in lines[0]


def test_damaged_ncu_rep_that_loads_nothing_says_so(tmp_path: Path) -> None:
    """Not "ncu matched no kernel" (a capture-filter hint): the file holds 2 results."""
    pytest.importorskip("ncu_report", reason="ncu-report not installed")
    if not NCU_REP.is_file():
        pytest.skip("ncu report absent")
    b = bytearray(NCU_REP.read_bytes())
    r = random.Random(3)
    off = r.randrange(len(b) // 4, len(b) - 100)
    b[off:off + 64] = r.randbytes(64)
    bad = tmp_path / "loads_none.ncu-rep"
    bad.write_bytes(bytes(b))
    proc = run_cli("--quiet", "kernels", bad, timeout=120)
    assert proc.returncode == 2 and proc.stderr.splitlines() == [
        f"crossview: error: {bad}: damaged .ncu-rep: it holds 2 profiled result(s), "
        "ncu_report loaded none"]


def _descendants(pid: int) -> set[int]:
    kids: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        kids.setdefault(ppid, []).append(int(d.name))
    out: set[int] = set()
    todo = [pid]
    while todo:
        for c in kids.get(todo.pop(), []):
            out.add(c)
            todo.append(c)
    return out


def _alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc (Linux)")
def test_pool_workers_die_with_a_killed_parent(tmp_path: Path) -> None:
    """`kill -9` of `crossview ingest --workers 2`: its forkserver, resource tracker and
    workers (alive 20+ min before) are all gone within seconds."""
    if not RANKS.is_dir():
        pytest.skip("Megatron ranks absent")
    src = tmp_path / "in"
    src.mkdir()
    for f in sorted(RANKS.glob("rank-*.json.gz")):
        shutil.copyfile(f, src / f.name)
    proc = subprocess.Popen(cli_command("--quiet", "ingest", "--lake", tmp_path / "lake",
                                        "--workers", "2", src),
                            env=cli_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        family: set[int] = set()
        while time.monotonic() < deadline and proc.poll() is None:
            family = _descendants(proc.pid)
            if len(family) >= 4:  # resource tracker, forkserver, 2 workers
                break
            time.sleep(0.2)
        if proc.poll() is not None:
            pytest.skip("the ingest finished before its pool could be caught running")
        assert len(family) >= 4, family
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and any(_alive(p) for p in family):
            time.sleep(0.2)
        assert not [p for p in family if _alive(p)]
    finally:
        if proc.poll() is None:
            proc.kill()
