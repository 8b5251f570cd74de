"""`crossview capture -o B -- CMD…`: run a command with the profiler hook (child.py) in every
Python process it starts, the samplers in this process, then the optional ncu re-run, and
write bundle.yaml from the machine probe and what each child reported."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path

import crossview
from crossview.capture import machine, ncu
from crossview.capture.bundle_file import BundleMeta, now_iso
from crossview.capture.child import ENV_DIR, ENV_SCHEDULE, STATUS_DIR
from crossview.capture.profiler import Schedule
from crossview.capture.samplers import Samplers
from crossview.capture.session import gpu_less_message, say
from crossview.errors import UsageError

HOOK_DIR = Path(__file__).resolve().parent / "hook"


@dataclass
class ScriptOptions:
    schedule: Schedule = field(default_factory=Schedule)
    interval_ms: int = 100
    host_interval_ms: int = 500
    ncu_kernels: str | None = None
    ncu_launch_count: int = 3
    ncu_rep: Path | None = None
    regime: str | None = None


def child_env(bundle: Path, schedule: Schedule, base: dict[str, str]) -> dict[str, str]:
    """The command's environment: the hook first on PYTHONPATH, the bundle and schedule set.
    crossview's own source root is added too when it is not a site-packages folder (an
    editable install), so a different Python can still import the hook's two modules."""
    env = dict(base)
    parts = [str(HOOK_DIR)]
    root = Path(crossview.__file__).resolve().parent.parent
    if Path(sysconfig.get_paths()["purelib"]).resolve() != root and root.name != "site-packages":
        parts.append(str(root))
    if env.get("PYTHONPATH"):
        parts.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(parts)
    env[ENV_DIR] = str(bundle.resolve())
    env[ENV_SCHEDULE] = schedule.to_env()
    return env


def collect_children(bundle: Path, meta: BundleMeta) -> int:
    """Fold each child's status into meta; returns how many trace files they wrote."""
    d = bundle / STATUS_DIR
    traces = 0
    for f in sorted(d.glob("*.json")) if d.is_dir() else []:
        try:
            st = json.loads(f.read_text(encoding="utf-8"))
        except ValueError:
            meta.note(f"unreadable child status {f.name}")
            continue
        traces += len(st.get("files") or [])
        for p in st.get("problems") or []:
            meta.note(f"pid {st.get('pid')}: {p}")
        meta.extra.update(st.get("versions") or {})
        if st.get("engine"):
            meta.set("engine", st["engine"])
            meta.set("engine_version", st.get("engine_version"))
        for rel in st.get("files") or []:
            meta.artifacts[rel] = {"phase": "all", "note": f"pid {st.get('pid')}, "
                                   f"{st.get('steps')} step(s) seen"}
        if st.get("files") and not st.get("gpu"):
            meta.note("CPU-only trace: torch saw no CUDA device, so the trace has host "
                      "activity only (no kernels)")
    shutil.rmtree(d, ignore_errors=True)
    return traces


def run_script(bundle: Path, cmd: list[str], opts: ScriptOptions) -> int:
    """Capture `cmd` into `bundle`; returns the command's exit status."""
    if not cmd:
        raise UsageError("no command to capture: crossview capture -o BUNDLE -- python x.py")
    if shutil.which(cmd[0]) is None:
        raise UsageError(f"{cmd[0]}: command not found")
    bundle.mkdir(parents=True, exist_ok=True)
    meta = BundleMeta(command=shlex.join(cmd))
    facts = machine.probe()
    meta.add_machine(facts)
    msg = gpu_less_message(facts)
    if msg:
        say(msg)
    samplers = Samplers(bundle, opts.interval_ms, opts.host_interval_ms,
                        gpu=bool(facts.gpus)).start()
    env = child_env(bundle, opts.schedule, dict(os.environ))
    try:
        rc = subprocess.run(cmd, env=env).returncode
    except KeyboardInterrupt:
        rc = 130
        meta.note("interrupted (Ctrl-C): the capture may be partial")
    finally:
        samplers.stop()
    if rc != 0:
        meta.note(f"command exited with status {rc}")
    for p in samplers.problems:
        meta.note(p)
    for rel in samplers.files:
        meta.artifacts[rel] = {"phase": "all", "note": "sampled over the whole command"}
    if collect_children(bundle, meta) == 0:
        meta.note("no torch-profiler trace written: no Python process of the command "
                  "imported torch and reached the schedule's active steps")
    if opts.regime:
        meta.extra["regime"] = opts.regime
    if opts.ncu_kernels:
        res = ncu.run(bundle, cmd, opts.ncu_kernels, opts.ncu_launch_count,
                      env=dict(os.environ), keep_rep=opts.ncu_rep)
        if res.message:
            say(res.message)
        for p in res.problems:
            meta.note(p)
        for rel in res.files:
            meta.artifacts[rel] = {"phase": "all", "note": f"ncu --set full, kernels "
                                   f"regex:{opts.ncu_kernels}, {opts.ncu_launch_count} launch(es)"
                                   ", separate run"}
    meta.ended = now_iso()
    meta.write(bundle)
    return rc
