"""`.nsys-rep` (and legacy `.qdrep`): Nsight Systems' own binary report, proprietary.

Converted with `nsys export --type sqlite` when the `nsys` CLI is on PATH, then read by the
SQLite reader (the artifact keeps the report's path and says it was converted); without the
CLI, one line says how to convert it.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from crossview.errors import InputError
from crossview.sources.artifact_report import ArtifactReport
from crossview.sources.nsys import sqlite_reader
from crossview.store.store import Store

KIND = "nsys-rep"
MAGIC = b"NVIDIA Tegra Profiler Report"  # first bytes of .nsys-rep (2024.6, 2025.1 reports)
EXPORT_TIMEOUT_S = 3600


def sniff(head: bytes, path: Path) -> bool:
    return head.startswith(MAGIC)


def read(path: Path, store: Store) -> ArtifactReport:
    path = Path(path)
    if path.stat().st_size == 0:
        raise InputError(path, "empty file (0 bytes)", "empty")
    exe = shutil.which("nsys")
    if exe is None:
        raise InputError(
            path, "an Nsight Systems report needs the `nsys` CLI to convert, and none is on "
            f"PATH: run `nsys export --type sqlite --output {path.stem}.sqlite {path.name}` "
            "where Nsight Systems is installed, then analyze the .sqlite", "unsupported")
    with tempfile.TemporaryDirectory(prefix="crossview-nsys-") as tmp:
        out = Path(tmp) / (path.stem + ".sqlite")
        try:
            proc = subprocess.run(
                [exe, "export", "--type=sqlite", "--force-overwrite=true",
                 f"--output={out}", str(path)],
                capture_output=True, text=True, timeout=EXPORT_TIMEOUT_S, check=False)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise InputError(path, f"`nsys export` failed: {e}") from None
        if proc.returncode != 0 or not out.is_file():
            last = (proc.stderr or proc.stdout).strip().splitlines()
            why = last[-1] if last else f"exit code {proc.returncode}"
            raise InputError(path, f"`nsys export --type sqlite` could not convert it: {why}")
        report = sqlite_reader.read(out, store)
    store.sql("UPDATE artifacts SET path = $p, bytes = $b WHERE artifact_id = $a",
              {"p": str(path), "b": path.stat().st_size, "a": report.artifact_id})
    report.path = str(path)
    report.notes.insert(0, f"converted with `{exe} export --type sqlite`")
    store.sql("UPDATE artifacts SET notes = $n WHERE artifact_id = $a",
              {"n": report.notes, "a": report.artifact_id})
    return report
