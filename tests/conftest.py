"""What the tests share: where the real captures are, and one way to run the CLI.

- ``SHARED_DATA``: the public captures (``../shared/data`` beside this checkout). Tests that
  need them skip, with ``SHARED_DATA_ABSENT`` as the reason, where they are not checked out:
  mark a module or test with ``needs_shared_data``, call ``shared_file(path)`` for one file,
  or take the ``shared_data`` fixture.
- ``run_cli(*args)``: ``python -m crossview ARGS`` in a child process that imports THIS
  checkout's ``src`` (PYTHONPATH first), under a timeout, returning the completed process
  (``returncode``, ``stdout``, ``stderr``). Use it where a real process matters (exit codes,
  stdio, signals, a fresh interpreter); in-process calls are cheaper everywhere else.

Test modules import these names (``from conftest import SHARED_DATA, run_cli``): pytest puts
this folder on ``sys.path`` (rootdir-relative test modules, no ``__init__.py``), which is also
how ``import oracle`` resolves.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src"
SHARED_DATA = REPO.parent / "shared" / "data"
SHARED_DATA_ABSENT = (f"real captures absent: {SHARED_DATA} (../shared/data beside this "
                      "checkout) is not there")
CLI_TIMEOUT_S = 300  # a hang is a failure too
# The persistent capture cache (crossview/cache) is off in every test, in process and in the
# `crossview` children (they inherit the environment): a test that changes a reader or a
# file must see its own read, and no test writes under the home folder. tests/test_cache.py
# turns it on with its own folder.
NO_CACHE = {"CROSSVIEW_NO_CACHE": "1"}
os.environ.update(NO_CACHE)

needs_shared_data = pytest.mark.skipif(not SHARED_DATA.is_dir(), reason=SHARED_DATA_ABSENT)


def shared_file(path: Path) -> Path:
    """`path` (under SHARED_DATA), or skip the calling test saying which capture is missing."""
    if not path.exists():
        pytest.skip(f"{path} absent ({SHARED_DATA_ABSENT})")
    return path


def copied_capture(path: Path, folder: Path) -> Path:
    """A copy of the shared capture `path` as `folder`/in/trace<suffixes> (a test may edit or
    cache it without touching ../shared/data); skips as shared_file when it is absent."""
    dest = folder / "in" / ("trace" + "".join(path.suffixes[-2:]))
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(shared_file(path), dest)
    return dest


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The real-capture folder; skips the test where it is not checked out."""
    if not SHARED_DATA.is_dir():
        pytest.skip(SHARED_DATA_ABSENT)
    return SHARED_DATA


def cli_env(env: Mapping[str, str] | None = None, *, inherit: bool = True) -> dict[str, str]:
    """The environment of a child `crossview`: this checkout's src first on PYTHONPATH.
    `inherit=False` starts from an empty environment (then `env` gives e.g. PATH)."""
    out = dict(os.environ) if inherit else dict(NO_CACHE)
    out.update(env or {})
    rest = out.get("PYTHONPATH", "")
    out["PYTHONPATH"] = str(SRC) + (os.pathsep + rest if rest else "")
    return out


def cli_command(*args: str | Path) -> list[str]:
    """argv of `python -m crossview ARGS` with this interpreter (for Popen / MCP clients)."""
    return [sys.executable, "-m", "crossview", *map(str, args)]


def crossview_on_path(bin_dir: Path) -> dict[str, str]:
    """An environment with a `crossview` command on PATH (a shim in `bin_dir`, created) that
    runs this checkout's sources, as an installed console script would."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    shim = bin_dir / "crossview"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m crossview "$@"\n')
    shim.chmod(0o755)
    return cli_env({"PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"})


def run_cli(*args: str | Path, cwd: Path | str = REPO, env: Mapping[str, str] | None = None,
            inherit_env: bool = True, timeout: float = CLI_TIMEOUT_S, input: str | None = None,
            check: bool = False) -> subprocess.CompletedProcess[str]:
    """Run `python -m crossview ARGS` from this checkout; text stdout/stderr captured."""
    return subprocess.run(cli_command(*args), capture_output=True, text=True, cwd=cwd,
                          env=cli_env(env, inherit=inherit_env), timeout=timeout, input=input,
                          check=check)
