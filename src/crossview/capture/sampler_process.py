"""The samplers in a helper process, for in-process captures.

torch's Python tracer (with_stack) records every thread of the profiled process, so sampler
threads waiting between ticks would show up as host time in the trace (measured: 36% of the
host self time of a small capture was `threading.wait`). In a helper process they cost the
workload nothing. The helper runs `Samplers` (threads) until its stdin closes, then prints
what it wrote and what went wrong as one JSON line.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from crossview.capture.samplers import Samplers


@dataclass
class SamplerProcess:
    bundle: Path
    interval_ms: int = 100
    host_interval_ms: int = 500
    gpu: bool = True
    files: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    _proc: subprocess.Popen[str] | None = None

    def start(self) -> SamplerProcess:
        cmd = [sys.executable, "-m", "crossview.capture.sampler_process", str(self.bundle),
               "--interval-ms", str(self.interval_ms),
               "--host-interval-ms", str(self.host_interval_ms)]
        if not self.gpu:
            cmd.append("--no-gpu")
        try:
            self._proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                          text=True)
        except OSError as e:
            self.problems.append(f"samplers not started: {e}")
        return self

    def stop(self) -> None:
        if self._proc is None:
            return
        try:
            out, _ = self._proc.communicate(input="", timeout=30)  # EOF on stdin: stop
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self.problems.append("samplers did not stop within 30 s and were killed")
            return
        try:
            rep = json.loads(out.strip().splitlines()[-1])
            self.files, self.problems = list(rep["files"]), self.problems + list(rep["problems"])
        except (ValueError, IndexError, KeyError, TypeError):
            self.problems.append(f"samplers exited with status {self._proc.returncode} "
                                 "without a report")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="crossview capture samplers (helper process)")
    p.add_argument("bundle", type=Path)
    p.add_argument("--interval-ms", type=int, default=100)
    p.add_argument("--host-interval-ms", type=int, default=500)
    p.add_argument("--no-gpu", action="store_true")
    a = p.parse_args(argv)
    s = Samplers(a.bundle, a.interval_ms, a.host_interval_ms, gpu=not a.no_gpu).start()
    with contextlib.suppress(KeyboardInterrupt):
        sys.stdin.read()  # until the capture closes the pipe (or dies)
    s.stop()
    print(json.dumps({"files": s.files, "problems": s.problems}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
