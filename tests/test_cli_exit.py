"""`crossview analyze` in one process ends without the interpreter's teardown (cli/app.py,
docs/decisions/0690): what it printed and wrote is complete, the exit code is kept, and the
store's spill folder is removed first."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import REPO, cli_env, run_cli
from crossview.analysis import analyze
from crossview.render import json as json_out

EXAMPLE = REPO / "examples" / "cpu_tiny_decode.pt.trace.json.gz"


def test_output_complete_and_exit_codes_kept(tmp_path: Path) -> None:
    want = json_out.render(analyze([EXAMPLE]))
    out = tmp_path / "a.json"
    r = run_cli("analyze", EXAMPLE, "--format", "json", "-o", out)
    assert r.returncode == 0, r.stderr
    assert out.read_text() == want
    r = run_cli("analyze", EXAMPLE, "--format", "json", "-o", "-")
    assert r.returncode == 0 and r.stdout == want  # stdout flushed before the exit
    r = run_cli("analyze", EXAMPLE, tmp_path / "missing.json", "--format", "json")
    assert r.returncode == 2  # a rejected input: exit 2, after the JSON and the error line
    assert json.loads(r.stdout)["schema_version"] and "missing.json" in r.stderr


def test_spill_folder_removed_and_code_kept() -> None:
    code = ("import os; from crossview.store.store import spill_dir; d = spill_dir(); "
            "os.makedirs(d); open(os.path.join(d, 'x.tmp'), 'w').write('spilled'); "
            "print(d); from crossview.cli.app import _exit_now; _exit_now(3)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=cli_env(None), cwd=REPO, timeout=120)
    assert r.returncode == 3
    folder = Path(r.stdout.strip())
    assert folder.name.startswith("crossview-duckdb-") and not folder.exists()
