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


def test_numpy_loads_with_one_blas_thread_and_env_given_back() -> None:
    """OpenBLAS's spinning threads are not started (decision 0768): numpy loads with no extra
    thread (Linux /proc: without the variable, numpy alone starts one per extra core), and the
    variable is the user's again after, unset or set, for a workload `capture` launches."""
    code = ("import os, sys, importlib; app = importlib.import_module('crossview.cli.app'); "
            "app._numpy_with_one_blas_thread(); "
            "print(len(os.listdir('/proc/self/task')), os.environ.get('OPENBLAS_NUM_THREADS'))")
    for user in (None, "7"):
        env = {k: v for k, v in cli_env(None).items() if k != "OPENBLAS_NUM_THREADS"}
        if user:
            env["OPENBLAS_NUM_THREADS"] = user
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env=env, cwd=REPO, timeout=120)
        assert r.returncode == 0, r.stderr
        threads, var = r.stdout.split()
        assert var == str(user)
        if user is None:
            assert threads == "1"
