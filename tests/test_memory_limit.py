"""`crossview --memory-limit` (or CROSSVIEW_MEMORY_LIMIT): DuckDB's limit on every Store, so a
large trace spills to the temp folder instead of growing the process (docs/architecture.md,
bounded memory; the RSS measurements are in bench/README.md, not asserted here). The answer
must not change with the limit; a malformed limit is one error line."""

from __future__ import annotations

import subprocess

import pytest

from conftest import SHARED_DATA, run_cli
from crossview.errors import UsageError
from crossview.store.store import Store

TRACE = (SHARED_DATA / "kineto"
         / "hta_a100_ddp_resnet_nccl.json.gz")


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, env=env)


@pytest.mark.skipif(not TRACE.exists(), reason=f"{TRACE} absent (../shared/data)")
def test_same_answer_under_a_small_limit() -> None:
    plain = _run("-q", "analyze", str(TRACE), "-f", "json")
    limited = _run("-q", "--memory-limit", "64MB", "analyze", str(TRACE), "-f", "json")
    assert plain.returncode == limited.returncode == 0, limited.stderr
    assert limited.stdout == plain.stdout


def test_store_applies_the_environment_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CROSSVIEW_MEMORY_LIMIT", "123MB")
    got = Store().con.execute("SELECT current_setting('memory_limit')").fetchone()
    assert got is not None and got[0].endswith("MiB")  # DuckDB reports 117.3 MiB for 123MB
    assert abs(float(got[0].split()[0]) - 123e6 / 2**20) < 0.1
    monkeypatch.setenv("CROSSVIEW_MEMORY_LIMIT", "lots")
    with pytest.raises(UsageError, match="CROSSVIEW_MEMORY_LIMIT"):
        Store()


def test_malformed_limit_is_one_error_line() -> None:
    r = _run("--memory-limit", "lots", "analyze", "nothing.json")
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip().splitlines() == [
        "crossview: error: --memory-limit 'lots': expected a size such as 512MB or 2GB"]


@pytest.mark.skipif(not TRACE.exists(), reason=f"{TRACE} absent (../shared/data)")
def test_out_of_memory_is_one_line_not_an_internal_error() -> None:
    # 1 MB cannot hold the parsed JSON of the 2,700-kernel A100 trace: DuckDB runs out
    r = _run("-q", "--memory-limit", "1MB", "analyze", str(TRACE), "-f", "json")
    assert r.returncode == 2, r.stderr
    assert r.stdout == ""
    assert r.stderr.strip().splitlines() == [
        "crossview: error: out of memory under the memory limit (1MB): raise --memory-limit "
        "or read fewer files per run"]
