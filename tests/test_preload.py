"""The preload (crossview/preload.py, decision 0907): the modules an analysis needs next are
imported in a background thread while the read runs. That is safe only while the read itself
imports no module that lies in an import cycle; these tests check it on real reads of every
format in ../shared/data, against the package's import graph read from the source."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import textwrap

import pytest

from conftest import SHARED_DATA, SHARED_DATA_ABSENT, SRC
from crossview.analysis import ANALYSIS_MODULES
from crossview.preload import Preload
from test_import_graph import cycles, modules


def _loaded(name: str, path, known: dict) -> set[str]:
    """The crossview modules loading `name` executes: its module-level imports (also inside
    if / try), not those under TYPE_CHECKING or inside functions; importing a.b.c runs a and
    a.b too. (test_import_graph.py's graph counts every import and no parent package: it
    checks layering; here the question is which module locks an import takes.)"""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def visit(body: list[ast.stmt]) -> None:
        for n in body:
            if isinstance(n, ast.If):
                if "TYPE_CHECKING" in ast.unparse(n.test):
                    visit(n.orelse)
                else:
                    visit(n.body)
                    visit(n.orelse)
            elif isinstance(n, ast.Try):
                visit(n.body)
                for h in n.handlers:
                    visit(h.body)
                visit(n.orelse)
                visit(n.finalbody)
            elif isinstance(n, ast.Import):
                found.update(a.name for a in n.names)
            elif isinstance(n, ast.ImportFrom):
                base = n.module or ""
                if n.level:
                    up = package.split(".")[: len(package.split(".")) - (n.level - 1)]
                    base = ".".join([*up, *([n.module] if n.module else [])])
                found.add(base)
                found.update(f"{base}.{a.name}" for a in n.names)

    visit(tree.body)
    out = set()
    for m in found:
        parts = m.split(".")
        out.update(p for p in (".".join(parts[:k]) for k in range(1, len(parts) + 1))
                   if p in known and p != name)
    return out


def import_cycles() -> list[set[str]]:
    """The groups of crossview modules whose loading runs into each other (more than one
    module each)."""
    files = modules(SRC)
    return [set(c) for c in cycles({n: dict.fromkeys(_loaded(n, p, files))
                                    for n, p in files.items()})]


def test_cycle_finder_finds_a_known_package_cycle() -> None:
    """The finder itself can fail: the detectors package imports its modules, which import
    the package (checked by hand in src/crossview/detectors/__init__.py)."""
    cycles = import_cycles()
    detectors = next((c for c in cycles if "crossview.detectors" in c), set())
    assert "crossview.detectors.gpu_idle" in detectors
    assert not any("crossview.sources.kineto.reader" in c for c in cycles)


_READ_IMPORTS = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    import crossview.analysis  # what analyze has loaded before it starts the preload
    from crossview.sources.registry import read_all
    from crossview.store.store import Store
    before = set(sys.modules)
    reports = read_all([Path(p) for p in sys.argv[1:]], Store())
    print(json.dumps({"new": sorted(set(sys.modules) - before),
                      "status": [r.status for r in reports]}))
""")


@pytest.mark.skipif(not SHARED_DATA.is_dir(), reason=SHARED_DATA_ABSENT)
def test_the_read_imports_no_module_of_an_import_cycle() -> None:
    """Real reads of every format the shared data holds (Kineto gzip and a rank folder, nsys
    SQLite, ncu report, DCGM / nvidia-smi / vLLM metrics), in a fresh interpreter: the
    modules they import while the preload runs lie in no import cycle."""
    inputs = [SHARED_DATA / "kineto" / "tracelens_b200_vllm_eager_prefill_tp8.json.gz",
              SHARED_DATA / "nsys" / "nvfuser_h200_nsys2025.1.sqlite",
              SHARED_DATA / "ncu" / "cudacode_rtx2080ti_two_kernels.ncu-rep",
              SHARED_DATA / "metrics"]
    out = subprocess.run([sys.executable, "-c", _READ_IMPORTS, *map(str, inputs)],
                         capture_output=True, text=True, timeout=300, check=True,
                         env={"PYTHONPATH": str(SRC), "CROSSVIEW_NO_CACHE": "1",
                              "PATH": "/usr/bin:/bin"})
    got = json.loads(out.stdout)
    assert "ok" in got["status"], got
    imported = {m for m in got["new"] if m.startswith("crossview.")}
    assert "crossview.sources.kineto.reader" in imported  # the read did import its readers
    in_cycles = set().union(*import_cycles())
    assert not imported & in_cycles


def test_preload_imports_in_the_background_and_keeps_going_past_a_failure() -> None:
    p = Preload(["crossview_no_such_module_0907", "crossview.preload", "json"])
    p.join()
    assert p.failed == ["crossview_no_such_module_0907"]
    assert "json" in sys.modules


def test_the_analysis_modules_exist() -> None:
    """A renamed module would make the preload a silent no-op: every name must import."""
    p = Preload(ANALYSIS_MODULES)
    p.join()
    assert p.failed == []
