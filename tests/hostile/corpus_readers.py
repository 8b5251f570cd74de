"""Hostile-input cases of the readers' second pass (issue 43, items 3–5 and 7).

Silently wrong values (booleans or text where numbers belong, clocks that disagree across
threads, kernels overlapping on one stream, names that do not resolve, a CSV cut mid-row, a
histogram bound that is not a number) must each be flagged; inputs built to be slow (ties,
many members or files, recursive SQLite views) must be answered or refused within
`budget_s`; a too-deep file is refused alone. Synthetic inputs unless a real capture from
../shared/data is named as the base (those cases are skipped without it).
"""

from __future__ import annotations

import gzip
import io
import json
import shutil
import sqlite3
import tarfile
import zipfile
from collections.abc import Callable
from pathlib import Path

from .corpus import (
    DATA,
    NSYS_SQLITE,
    PROM,
    Case,
    _cut_midline,
    _k_events,
    _kineto,
    _real,
    _sqlite_mutate,
)

NCCL_KINETO = DATA / "kineto" / "hta_a100_ddp_resnet_nccl.json.gz"
NCU_CSV = DATA / "ncu" / "llm-perf-opt_rtx5090_deepseek-ocr" / "kernel_0001_ncu.details.csv"
HOUR_US = 3_600_000_000.0
# the wall-clock budget of the cases built to be slow (issue 43: ≤ 10 s each); they run with
# `--big` (tests/hostile/test_reader_budgets.py checks their answers in pytest)
BUDGET_S = 10.0


def _bool_ts(d: Path) -> Path:
    """Kineto events whose `ts` is a JSON boolean (DuckDB would read `true` as 1.0)."""
    evs = _k_events()
    evs += [dict(e, ts=True) for e in _k_events()]
    p = d / "bool_ts.pt.trace.json"
    p.write_bytes(_kineto(evs))
    return p


def _text_dur(d: Path) -> Path:
    """A kernel's `dur` given as text ("5.0"): not a number, whatever it spells."""
    evs = _k_events()
    evs[1] = dict(evs[1], dur="5.0")
    p = d / "text_dur.pt.trace.json"
    p.write_bytes(_kineto(evs))
    return p


def _clock_shift(d: Path) -> Path:
    """A real DDP trace (HTA A100, NCCL on stream 40) with one CPU thread's events moved
    −1 h and the NCCL stream's kernels +1 h: their launches and kernels cannot agree."""
    doc = json.loads(gzip.decompress(NCCL_KINETO.read_bytes()))
    for e in doc["traceEvents"]:
        if e.get("ph") != "X" or not isinstance(e.get("ts"), int | float):
            continue
        if e.get("tid") == 2919752 and e.get("pid") == 2910249:
            e["ts"] -= HOUR_US
        elif e.get("pid") == 0 and e.get("tid") == 40:
            e["ts"] += HOUR_US
    p = d / "clock_shift.pt.trace.json"
    p.write_text(json.dumps(doc))
    return p


def _stream_overlap(d: Path) -> Path:
    """Three kernels on one stream, each starting 20 µs into the one before (a stream
    runs its kernels one after another)."""
    rt = {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 100,
          "tid": 100, "dur": 2.0}
    evs = []
    for i in range(3):
        evs.append(dict(rt, ts=900.0 + 10 * i, args={"correlation": i + 1}))
        evs.append({"ph": "X", "cat": "kernel", "name": f"gemm{i}", "pid": 0, "tid": 7,
                    "ts": 1000.0 + 20 * i, "dur": 100.0,
                    "args": {"device": 0, "stream": 7, "correlation": i + 1}})
    p = d / "overlap.pt.trace.json"
    p.write_bytes(_kineto(evs))
    return p


def _same_ts(n: int, name: str) -> Callable[[Path], Path]:
    """`n` host events of one thread sharing one timestamp (ties in the nesting), and one
    kernel they launch."""
    def make(d: Path) -> Path:
        evs = [{"ph": "X", "cat": "cpu_op", "name": f"op{i % 7}", "pid": 100, "tid": 100,
                "ts": 1000.0, "dur": 50.0} for i in range(n)]
        evs += _k_events()
        p = d / name
        p.write_bytes(_kineto(evs))
        return p
    return make


def _tgz_many(n: int) -> Callable[[Path], Path]:
    """A .tgz of `n` tiny members that no reader takes (not one line each)."""
    def make(d: Path) -> Path:
        p = d / f"many{n}.tgz"
        with tarfile.open(p, "w:gz") as t:
            info = tarfile.TarInfo("x")
            body = b"{}"
            for i in range(n):
                info.name = f"part/m{i}.json"
                info.size = len(body)
                t.addfile(info, io.BytesIO(body))
        return p
    return make


def _zip_many(n: int) -> Callable[[Path], Path]:
    """A .zip of `n` empty members (its central directory alone is ~50 bytes a member)."""
    def make(d: Path) -> Path:
        p = d / f"many{n}.zip"
        with zipfile.ZipFile(p, "w") as z:
            for i in range(n):
                z.writestr(f"m{i}.json", b"")
        return p
    return make


def _many_files(n: int) -> Callable[[Path], Path]:
    """A bundle folder of `n` small files (a dataset dumped beside the captures)."""
    def make(d: Path) -> Path:
        f = d / "bundle_many"
        f.mkdir()
        for i in range(n):
            (f / f"r{i}.json").write_bytes(b'{"x": 1}')
        return f
    return make


_RECURSIVE = ("CREATE VIEW {t} AS WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL "
              "SELECT n + 1 FROM r) SELECT {cols} FROM r;")


def _recursive_strings(d: Path) -> Path:
    return _sqlite_mutate("recursive_strings.sqlite", "DROP TABLE StringIds;" + _RECURSIVE.format(
        t="StringIds", cols="n AS id, 'x' || n AS value"))(d)


def _recursive_kernels(d: Path) -> Path:
    cols = ("n AS start, n + 10 AS \"end\", 0 AS deviceId, 0 AS contextId, 7 AS streamId, "
            "n AS correlationId, 1 AS globalPid, 1 AS demangledName, 1 AS shortName, "
            "1 AS gridX, 1 AS gridY, 1 AS gridZ, 1 AS blockX, 1 AS blockY, 1 AS blockZ")
    return _sqlite_mutate("recursive_kernels.sqlite",
                          "DROP TABLE CUPTI_ACTIVITY_KIND_KERNEL;"
                          + _RECURSIVE.format(t="CUPTI_ACTIVITY_KIND_KERNEL", cols=cols))(d)


def _prom_bad_le(raw: bytes) -> bytes:
    i = raw.index(b'le="')
    j = raw.index(b'"', i + 4)
    return raw[:i] + b'le="abc' + raw[j:]


def _folded_100k(d: Path) -> Path:
    p = d / "deep100k.folded"
    p.write_text(";".join(f"f{i}" for i in range(100_000)) + " 7\nmain;leaf 3\n")
    return p


def _wal_sqlite(d: Path) -> Path:
    """The real nsys export switched to WAL mode (nothing may appear beside it)."""
    p = d / "wal_mode.sqlite"
    shutil.copyfile(NSYS_SQLITE, p)
    con = sqlite3.connect(p)
    con.execute("PRAGMA journal_mode=WAL")
    con.close()
    for side in ("-wal", "-shm"):
        Path(str(p) + side).unlink(missing_ok=True)
    return p


CASES: list[Case] = [
    # item 3: values that would be read silently wrong
    Case("k_ts_bool", _bool_ts),
    Case("k_dur_text", _text_dur),
    Case("k_clock_shift", _clock_shift),
    Case("k_stream_overlap", _stream_overlap),
    Case("nsys_strings_empty", _sqlite_mutate("strings_empty.sqlite", "DELETE FROM StringIds;")),
    Case("ncu_csv_cut", _real(NCU_CSV, "cut_ncu.details.csv", _cut_midline)),
    Case("prom_le_text", _real(PROM, "bad_le.prom", _prom_bad_le)),
    # item 4: budgets
    Case("k_same_ts_20k", _same_ts(20_000, "same_ts.pt.trace.json"),
         budget_s=BUDGET_S, big=True),
    Case("tgz_20k", _tgz_many(20_000), budget_s=BUDGET_S, big=True),
    Case("zip_200k", _zip_many(200_000), budget_s=BUDGET_S, big=True),
    Case("bundle_10k_files", _many_files(10_000), budget_s=BUDGET_S, big=True),
    Case("nsys_recursive_strings", _recursive_strings, budget_s=BUDGET_S, big=True),
    Case("nsys_recursive_kernels", _recursive_kernels, budget_s=BUDGET_S, big=True),
    Case("folded_100k", _folded_100k),
    # item 5: an input left as it was (the runner checks nothing appears beside it)
    Case("nsys_wal_ok", _wal_sqlite, ok=True),
]
