"""Progress bars while inputs are read (crossview.progress + cli/progress_bar.py).

Real captures from ../shared/data are the inputs (any file works; these two are small). The
"terminal" is Rich's Console(force_terminal=True) over a buffer, and once a real pty."""

from __future__ import annotations

import io
import os
import pty
import select
import subprocess
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from conftest import SHARED_DATA, cli_command, cli_env, run_cli
from crossview import progress
from crossview.cli import app, progress_bar
from crossview.sources.registry import read_all
from crossview.store.store import Store

DATA = SHARED_DATA
A100_DDP = DATA / "kineto" / "hta_a100_ddp_resnet_nccl.json.gz"
NSYS = DATA / "nsys" / "nvfuser_h200_nsys2025.1.sqlite"
pytestmark = pytest.mark.skipif(not DATA.is_dir(),
                                reason="../shared/data not present: real-capture tests need it")
runner = CliRunner()


def fake_tty() -> tuple[Console, io.StringIO]:
    buf = io.StringIO()
    return Console(file=buf, force_terminal=True, width=120), buf


class Recorder:
    """A Progress that records the calls, to check what the readers report."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, object]] = []

    def begin(self, files: int, total_bytes: int) -> None:
        self.calls.append(("begin", (files, total_bytes)))

    def file(self, path: str, size: int) -> None:
        self.calls.append(("file", (Path(path).name, size)))

    def phase(self, text: str) -> None:
        self.calls.append(("phase", text))

    def file_done(self) -> None:
        self.calls.append(("done", None))

    def end(self) -> None:
        self.calls.append(("end", None))


def test_readers_report_files_bytes_and_phases() -> None:
    rec = Recorder()
    with progress.reporting(rec):
        read_all([A100_DDP, NSYS], Store())
    sizes = A100_DDP.stat().st_size, NSYS.stat().st_size
    assert rec.calls[0] == ("begin", (2, sum(sizes)))
    assert ("file", (A100_DDP.name, sizes[0])) in rec.calls
    assert ("file", (NSYS.name, sizes[1])) in rec.calls
    phases = [c[1] for c in rec.calls if c[0] == "phase"]
    assert "parsing JSON" in phases and "GPU activity" in phases  # Kineto and nsys readers
    assert [c[0] for c in rec.calls].count("done") == 2 and rec.calls[-1] == ("end", None)
    assert progress.current().__class__ is progress.Silent  # the block restored the default


def test_bar_draws_on_a_terminal() -> None:
    console, buf = fake_tty()
    with progress.reporting(progress_bar.RichProgress(console)):
        read_all([A100_DDP, NSYS], Store())
    out = buf.getvalue()
    assert "\x1b[" in out  # terminal control sequences: a live display
    assert f"{A100_DDP.name}: parsing JSON" in out
    assert "0/2 files" in out and "MB" in out


def test_cli_bar_only_on_a_terminal_and_not_with_quiet(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    console, buf = fake_tty()
    monkeypatch.setattr(progress_bar, "stderr_console", lambda: console)
    out = tmp_path / "r.md"
    r = runner.invoke(app, ["analyze", str(A100_DDP), "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert "parsing JSON" in buf.getvalue() and r.stderr == ""
    buf.truncate(0)
    buf.seek(0)
    r = runner.invoke(app, ["--quiet", "analyze", str(A100_DDP), "-o", str(out)])
    assert r.exit_code == 0 and buf.getvalue() == "" and r.stderr == ""
    r = runner.invoke(app, ["-q", "export", str(A100_DDP), "--to", "folded", "-o",
                            str(tmp_path / "f.txt")])
    assert r.exit_code == 0 and buf.getvalue() == "" and r.stderr == ""


def test_piped_stderr_has_no_progress_text(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FORCE_COLOR", raising=False)  # Rich treats it as "is a terminal"
    monkeypatch.delenv("TTY_COMPATIBLE", raising=False)
    r = run_cli("analyze", A100_DDP, "-o", tmp_path / "r.md", timeout=300, inherit_env=False,
                env={k: v for k, v in os.environ.items() if k != "FORCE_COLOR"})
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""


def test_a_real_pty_shows_the_bar(tmp_path: Path) -> None:
    master, slave = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "NO_COLOR")}
    env["COLUMNS"] = "120"
    proc = subprocess.Popen(cli_command("analyze", A100_DDP, "-o", tmp_path / "r.md"),
                            stderr=slave, stdout=subprocess.DEVNULL,
                            env=cli_env(env, inherit=False))
    os.close(slave)
    chunks = []
    while True:  # drain while it runs, so a full pty buffer never blocks the child
        ready, _, _ = select.select([master], [], [], 1.0)
        if ready:
            try:
                data = os.read(master, 65536)
            except OSError:
                break
            if not data:
                break
            chunks.append(data)
        elif proc.poll() is not None:
            break
    proc.wait(timeout=300)
    os.close(master)
    text = b"".join(chunks).decode("utf-8", "replace")
    assert proc.returncode == 0
    assert "parsing JSON" in text and "files" in text
