"""Each reader's memory multiple: peak RSS per input byte at a realistic input size (issue 18).

    python bench/reader_memory.py [--out /tmp/reader_memory] [--scale 1.0] [--only NAME,...]
                                  [--memory-limit 500MB] [--keep] [--json OUT]

For every reader, one input is built under --out from a real capture (../shared/data or
tests/fixtures) by repeating its records until it reaches the reader's realistic size (× --scale):

  kineto_json   bench/scale_trace.py of the HTA V100 DDP trace (ids offset per repeat)
  kineto_gz     that file gzipped (level 1)
  nsys_sqlite   bench_nsys.build of the nvFuser H200 2025.1 export (kernels + launches)
  ncu_csv       the DeepSeek-OCR kernel_0001 details CSV, rows repeated with new IDs
  folded        the py-spy folded stacks, each repeat's leaf frames renamed (distinct stacks)
  speedscope    the py-spy speedscope recording, samples and weights repeated
  pprof         the py-spy pprof, its sample records repeated (same locations)
  metrics_text  the vLLM /metrics scrape, its sample lines repeated
  nvidia_smi    a `--query-gpu ... --format=csv -l 1` log (8 GPUs; docs/formats.md layout)
  dcgmi         a `dcgmi dmon` log (8 GPUs; the documented layout, see test_metrics_readers)

Measured: a child process that only reads the input into the store (`read_all`, the reader's
own cost), then `crossview analyze FILE --format json -o /dev/null` (the whole CLI); each
under CROSSVIEW_MEMORY_LIMIT (--memory-limit). Peak RSS = the child's ru_maxrss (os.wait4).
The constant is the same child on the reader's small source file; the multiple is
(peak − constant) / input bytes. Generated files are deleted unless --keep.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"
FIX = REPO / "tests" / "fixtures" / "stacks"
sys.path.insert(0, str(REPO / "bench"))

from bench_nsys import build as nsys_build  # noqa: E402
from bench_nsys import measure  # noqa: E402

READ = ("import sys; from pathlib import Path; from crossview.sources.registry import read_all;"
        " from crossview.store.store import Store; r = read_all([Path(sys.argv[1])], Store());"
        " print(r[0].kind, r[0].status, r[0].problems[:1])")

KINETO_SRC = DATA / "kineto" / "hta_v100_ddp_training.json.gz"
NSYS_SRC = DATA / "nsys" / "nvfuser_h200_nsys2025.1.sqlite"
NCU_SRC = DATA / "ncu" / "llm-perf-opt_rtx5090_deepseek-ocr" / "kernel_0001_ncu.details.csv"
PROM_SRC = DATA / "metrics" / "vllm_v1_metrics_idle.prom"
MB = 1_000_000


def _repeat_text(head: str, body: Callable[[int], str], out: Path, size: int) -> Path:
    with open(out, "w", encoding="utf-8") as f:
        f.write(head)
        k = 0
        while f.tell() < size:
            f.write(body(k))
            k += 1
    return out


def kineto_json(out: Path, size: int) -> Path:
    p = out / "trace.pt.trace.json"
    subprocess.run([sys.executable, str(REPO / "bench" / "scale_trace.py"), str(KINETO_SRC),
                    str(p), "--min-mb", str(max(1, size // MB))], check=True,
                   stdout=subprocess.DEVNULL)
    return p


def kineto_gz(out: Path, size: int) -> Path:
    """kineto_json's file (kept by it for this) gzipped, else one built here."""
    plain = out.parent / "kineto_json" / "trace.pt.trace.json"
    if not plain.is_file():
        plain = kineto_json(out, size)
    p = out / "trace_gz.pt.trace.json.gz"
    with open(plain, "rb") as src, gzip.open(p, "wb", compresslevel=1) as dst:
        shutil.copyfileobj(src, dst, 1 << 24)
    plain.unlink()
    return p


def nsys_sqlite(out: Path, size: int) -> Path:
    """Kernels (+ their launch rows) repeated until the export is about `size` bytes: one
    kernel with its launch call adds ~120 bytes to the SQLite file (measured on this source)."""
    p = out / "report.sqlite"
    nsys_build(NSYS_SRC, p, max(1, (size - NSYS_SRC.stat().st_size) // 120))
    return p


def ncu_csv(out: Path, size: int) -> Path:
    lines = NCU_SRC.read_text(encoding="utf-8").splitlines(keepends=True)
    head, rows = lines[0], lines[1:]
    ids = sorted({r.split('","', 1)[0] for r in rows})
    stride = len(ids)

    def body(k: int) -> str:
        return "".join(re.sub(r'^"(\d+)"', lambda m: f'"{int(m[1]) + k * stride}"', r)
                       for r in rows)
    return _repeat_text(head, body, out / "kernels_ncu.details.csv", size)


def folded(out: Path, size: int) -> Path:
    lines = [ln for ln in (FIX / "pyspy_work.folded").read_text().splitlines() if ln.strip()]

    def body(k: int) -> str:  # the leaf frame renamed per repeat: distinct stacks
        return "".join(f"{s.rsplit(' ', 1)[0]}_{k} {s.rsplit(' ', 1)[1]}\n" for s in lines)
    return _repeat_text("", body, out / "stacks.folded", size)


def speedscope(out: Path, size: int) -> Path:
    doc = json.loads((FIX / "pyspy_work.speedscope.json").read_text())
    one = len(json.dumps(doc))
    k = max(1, size // one)
    for prof in doc["profiles"]:
        prof["samples"] = prof["samples"] * k
        prof["weights"] = prof["weights"] * k
        if "endValue" in prof:
            prof["endValue"] = prof["startValue"] + sum(prof["weights"])
    p = out / "profile.speedscope.json"
    p.write_text(json.dumps(doc))
    return p


def _fields(buf: bytes) -> list[tuple[int, bytes]]:
    """Top-level protobuf fields: (field number, the field's raw bytes incl. its key)."""
    out, i = [], 0

    def varint(j: int) -> tuple[int, int]:
        v = shift = 0
        while True:
            b = buf[j]
            v |= (b & 0x7F) << shift
            j += 1
            shift += 7
            if b < 0x80:
                return v, j
    while i < len(buf):
        start = i
        key, i = varint(i)
        wt = key & 7
        if wt == 0:
            _, i = varint(i)
        elif wt == 2:
            n, i = varint(i)
            i += n
        elif wt == 1:
            i += 8
        elif wt == 5:
            i += 4
        out.append((key >> 3, buf[start:i]))
    return out


def pprof(out: Path, size: int) -> Path:
    raw = gzip.decompress((FIX / "pyspy_work_cpu.pb.gz").read_bytes())
    samples = b"".join(b for num, b in _fields(raw) if num == 2)  # Profile.sample = 2
    k = max(1, (size - len(raw)) // max(1, len(samples)))
    p = out / "cpu.pb"
    with open(p, "wb") as f:
        f.write(raw)
        for _ in range(k):
            f.write(samples)
    return p


def metrics_text(out: Path, size: int) -> Path:
    text = PROM_SRC.read_text(encoding="utf-8")
    samples = "".join(ln + "\n" for ln in text.splitlines() if ln and not ln.startswith("#"))
    return _repeat_text(text, lambda k: samples, out / "scrape.prom", size)


def nvidia_smi(out: Path, size: int) -> Path:
    head = ("timestamp, index, name, utilization.gpu [%], memory.used [MiB], "
            "power.draw [W]\n")

    def body(k: int) -> str:
        h, m, s = k // 3600 % 24, k // 60 % 60, k % 60
        return "".join(f"2026/07/14 {h:02d}:{m:02d}:{s:02d}.000, {g}, NVIDIA H200, "
                       f"{(k + g) % 100} %, {120000 + g} MiB, {600 + g}.10 W\n"
                       for g in range(8))
    return _repeat_text(head, body, out / "smi.csv", size)


def dcgmi(out: Path, size: int) -> Path:
    head = ("#Entity   GRACT        SMACT        TENSO        DRAMA        FBUSD        POWER\n"
            "ID\n")

    def body(k: int) -> str:
        return "".join(f"GPU {g}     0.{(k + g) % 1000:03d}        0.930        0.000        "
                       f"0.252        70123        402.500\n" for g in range(8))
    return _repeat_text(head, body, out / "dmon.log", size)


# name: (build, realistic size in bytes, the small source the constant is measured on)
READERS: dict[str, tuple[Callable[[Path, int], Path], int, Path | None]] = {
    "kineto_json": (kineto_json, 250 * MB, KINETO_SRC),
    "kineto_gz": (kineto_gz, 250 * MB, KINETO_SRC),  # size: decompressed bytes built
    "nsys_sqlite": (nsys_sqlite, 250 * MB, NSYS_SRC),
    "ncu_csv": (ncu_csv, 50 * MB, NCU_SRC),
    "folded": (folded, 100 * MB, FIX / "pyspy_work.folded"),
    "speedscope": (speedscope, 100 * MB, FIX / "pyspy_work.speedscope.json"),
    "pprof": (pprof, 50 * MB, FIX / "pyspy_work_cpu.pb.gz"),
    "metrics_text": (metrics_text, 50 * MB, PROM_SRC),
    "nvidia_smi": (nvidia_smi, 50 * MB, DATA / "metrics" / "nvidia-smi_h100_capture.txt"),
    "dcgmi": (dcgmi, 50 * MB, None),  # the constant: a 1 KB log of the same layout
}


def _children(path: Path, limit: str) -> tuple[float, float, str]:
    """(read-only peak MiB, analyze peak MiB, what was read) of one input."""
    env_py = [sys.executable]
    os.environ["CROSSVIEW_MEMORY_LIMIT"] = limit
    os.environ["PYTHONPATH"] = str(REPO / "src")
    _, read_mib, what = measure([*env_py, "-c", READ, str(path)])
    _, cli_mib, _ = measure([*env_py, "-m", "crossview", "--quiet", "analyze", str(path),
                             "--format", "json", "-o", os.devnull])
    return read_mib, cli_mib, what.strip()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("/tmp/reader_memory"))
    ap.add_argument("--scale", type=float, default=1.0, help="× each reader's realistic size")
    ap.add_argument("--only", default="")
    ap.add_argument("--memory-limit", default="500MB")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    only = set(filter(None, a.only.split(",")))
    a.out.mkdir(parents=True, exist_ok=True)
    rows = []
    print(f"load {os.getloadavg()[0]:.1f}; CROSSVIEW_MEMORY_LIMIT="
          f"{a.memory_limit}; multiple = (peak - constant) / input bytes", flush=True)
    print(f"{'reader':13} {'input MB':>9} {'const MiB':>9} {'read MiB':>9} {'× read':>7} "
          f"{'analyze MiB':>11} {'× analyze':>9}  read as", flush=True)
    for name, (make, size, small) in READERS.items():
        if only and name not in only:
            continue
        d = a.out / name
        d.mkdir(exist_ok=True)
        if small is None:
            small = dcgmi(d, 1000).rename(d / "small_dmon.log")
        c_read, c_cli, _ = _children(small, a.memory_limit)
        p = make(d, int(size * a.scale))
        n = p.stat().st_size
        r_mib, a_mib, what = _children(p, a.memory_limit)
        mr = (r_mib - c_read) * 2**20 / n
        ma = (a_mib - c_cli) * 2**20 / n
        row = {"reader": name, "input_bytes": n, "const_read_mib": round(c_read),
               "read_peak_mib": round(r_mib), "read_multiple": round(mr, 2),
               "const_analyze_mib": round(c_cli), "analyze_peak_mib": round(a_mib),
               "analyze_multiple": round(ma, 2), "read_as": what}
        rows.append(row)
        print(f"{name:13} {n / MB:9.1f} {c_read:9.0f} {r_mib:9.0f} {mr:7.2f} {a_mib:11.0f} "
              f"{ma:9.2f}  {what}", flush=True)
        if not a.keep and name != "kineto_json":  # kineto_gz gzips (and removes) its file
            shutil.rmtree(d, ignore_errors=True)
    if not a.keep:
        shutil.rmtree(a.out / "kineto_json", ignore_errors=True)
    if a.json:
        a.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
