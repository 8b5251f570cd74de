"""The profiler inside a script run by `crossview capture -o B -- python script.py`.

Decision: an environment hook, not a runpy wrapper — `crossview capture` puts hook/ (which
holds a `sitecustomize.py`) first on PYTHONPATH and sets CROSSVIEW_CAPTURE_DIR, so *every*
Python process the command starts (python, torchrun's ranks, accelerate) profiles itself into
the bundle with no edit to the script and whatever launcher runs it. At exit each process
writes its steps, trace files, versions and problems to `.crossview-capture/<pid>.json` in the
bundle; the parent folds those into bundle.yaml and removes them. The profiler starts when the
process first imports torch (a meta-path hook), so one that never does pays nothing.
"""

from __future__ import annotations

import atexit
import importlib.abc
import importlib.util
import json
import os
import sys
import types
from pathlib import Path
from typing import Any

from crossview.capture import machine
from crossview.capture.profiler import Schedule, TorchProfiler

ENV_DIR = "CROSSVIEW_CAPTURE_DIR"
ENV_SCHEDULE = "CROSSVIEW_CAPTURE_SCHEDULE"
STATUS_DIR = ".crossview-capture"


class _OnTorchImport(importlib.abc.MetaPathFinder):
    """Starts the profiler right after the process first imports torch: a Python process of
    the command that never uses torch (a launcher, a helper script) pays nothing."""

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name != "torch":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec("torch")  # the finders after this one
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        run = loader.exec_module

        def exec_module(module: types.ModuleType) -> None:
            run(module)
            _start(Path(os.environ[ENV_DIR]))

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def start_from_env() -> bool:
    """Arm the capture for this process when `crossview capture` started it."""
    if not os.environ.get(ENV_DIR):
        return False
    if "torch" in sys.modules:
        _start(Path(os.environ[ENV_DIR]))
    else:
        sys.meta_path.insert(0, _OnTorchImport())
    return True


def _start(out: Path) -> TorchProfiler:
    prof = TorchProfiler(out, Schedule.from_env(os.environ.get(ENV_SCHEDULE, "whole")),
                         optimizer_steps=True)
    try:
        prof.start()
    except Exception as e:  # never break the user's script
        prof.problems.append(f"torch profiler not started in pid {os.getpid()}: {e}")
    atexit.register(finish, prof)
    return prof


def finish(prof: TorchProfiler) -> None:
    try:
        prof.stop()
    except Exception as e:
        prof.problems.append(f"torch profiler stop failed in pid {os.getpid()}: {e}")
    engine, ver = machine.engine_in_process()
    status = {"pid": os.getpid(), "argv": sys.argv, "steps": prof.steps, "files": prof.files,
              "gpu": prof.gpu, "problems": prof.problems, "versions": machine.torch_facts(),
              "engine": engine, "engine_version": ver}
    d = prof.bundle / STATUS_DIR
    d.mkdir(parents=True, exist_ok=True)
    (d / f"{os.getpid()}.json").write_text(json.dumps(status), encoding="utf-8")
