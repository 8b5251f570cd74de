"""The reader registry imports a reader's module only when that reader is asked: its lines
name the module, so each line's kind must be the one the module itself declares (KIND).
A fresh interpreter reading one Kineto trace imports no other reader (start-up time)."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

from crossview.sources.registry import READERS

REPO = Path(__file__).resolve().parents[1]


def test_each_line_names_its_modules_kind() -> None:
    for r in READERS:
        mod = importlib.import_module(f"crossview.sources.{r.module}")
        assert r.kind == mod.KIND, r.module
        assert callable(mod.sniff) and callable(mod.read), r.module


def test_kineto_read_imports_no_other_reader(tmp_path: Path) -> None:
    trace = tmp_path / "t.json"
    trace.write_text('{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm",'
                     ' "pid": 1, "tid": 1, "ts": 10, "dur": 5}]}')
    code = ("import sys; from crossview.analysis import analyze; analyze([sys.argv[1]]);"
            "print(' '.join(m for m in sys.modules if m.startswith('crossview.sources.')"
            " and m.count('.') == 3))")
    out = subprocess.run([sys.executable, "-c", code, str(trace)], capture_output=True,
                         text=True, check=True, env={"PYTHONPATH": str(REPO / "src")}).stdout
    readers = {f"crossview.sources.{r.module}" for r in READERS}
    assert readers & set(out.split()) == {"crossview.sources.kineto.reader"}
