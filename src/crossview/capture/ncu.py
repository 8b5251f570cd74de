"""The optional Nsight Compute step of a script capture: re-run the command under
`ncu --set full` for the kernels matching a regex (a few launches), export the details page as
CSV into the bundle (the format sources/ncu/csv_reader.py reads). The .ncu-rep itself is not
put in the bundle (crossview would count its launches twice); `--ncu-rep PATH` keeps it.

A separate run, because ncu replays each profiled kernel many times and would distort the
torch trace and the samplers; the torch-profiler hook is not active in it.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

NCU_DIR = "ncu"


@dataclass(frozen=True)
class NcuPlan:
    regex: str
    launch_count: int
    rep: Path  # the -o report (ncu adds .ncu-rep)
    csv: Path

    def profile_cmd(self, ncu: str, cmd: list[str]) -> list[str]:
        return [ncu, "--set", "full", "--kernel-name", f"regex:{self.regex}",
                "--launch-count", str(self.launch_count), "--target-processes", "all",
                "-f", "-o", str(self.rep), *cmd]

    def export_cmd(self, ncu: str) -> list[str]:
        return [ncu, "--import", f"{self.rep}.ncu-rep", "--csv", "--page", "details"]


@dataclass
class NcuResult:
    files: list[str] = field(default_factory=list)  # bundle-relative
    problems: list[str] = field(default_factory=list)
    message: str | None = None  # the one line to show the user


def plan(bundle: Path, regex: str, launch_count: int, workdir: Path) -> NcuPlan:
    return NcuPlan(regex, launch_count, workdir / "profile",
                   bundle / NCU_DIR / "profile.details.csv")


def run(bundle: Path, cmd: list[str], regex: str, launch_count: int,
        env: dict[str, str] | None = None, ncu: str | None = None,
        keep_rep: Path | None = None) -> NcuResult:
    """The ncu step; `keep_rep`: where to keep the .ncu-rep (default: not kept)."""
    res = NcuResult()
    ncu = ncu or shutil.which("ncu")
    if ncu is None:
        res.message = (f"ncu not on PATH: the Nsight Compute step (--ncu-kernels {regex!r}) "
                       "was skipped; the bundle has no ncu export")
        res.problems.append(res.message)
        return res
    with tempfile.TemporaryDirectory(prefix="crossview-ncu-") as tmp:
        return _profile(bundle, cmd, plan(bundle, regex, launch_count, Path(tmp)), env, ncu,
                        keep_rep, res)


def _profile(bundle: Path, cmd: list[str], p: NcuPlan, env: dict[str, str] | None, ncu: str,
             keep_rep: Path | None, res: NcuResult) -> NcuResult:
    p.csv.parent.mkdir(parents=True, exist_ok=True)
    prof = subprocess.run(p.profile_cmd(ncu, cmd), env=env, capture_output=True, text=True)
    if prof.returncode != 0 or not Path(f"{p.rep}.ncu-rep").exists():
        tail = (prof.stderr or prof.stdout).strip().splitlines()[-1:] or ["no output"]
        res.problems.append(f"ncu run failed (exit {prof.returncode}): {tail[0]}")
        return res
    exp = subprocess.run(p.export_cmd(ncu), capture_output=True, text=True)
    if exp.returncode != 0 or not exp.stdout.strip():
        res.problems.append(f"ncu CSV export failed (exit {exp.returncode})")
        return res
    if "==PROF== No kernels were profiled" in prof.stdout + prof.stderr:
        res.problems.append(f"ncu profiled no kernel matching regex:{p.regex}")
    p.csv.write_text(exp.stdout, encoding="utf-8")
    res.files.append(str(p.csv.relative_to(bundle)))
    if keep_rep is not None:
        # not inside the bundle: crossview would read the same launches twice (CSV + report)
        keep_rep.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(f"{p.rep}.ncu-rep", keep_rep)
    return res
