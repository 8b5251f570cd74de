"""A hostile-input corpus, generated at run time (issue 18): one maker per class of damage.

Each case writes its bad input into a fresh folder beside nothing else; the runner
(tests/hostile/run.py) puts a good capture next to it. Cases are small except the bombs,
whose *compressed* size is small and whose expansion is what is being tested. Real captures
from ../shared/data are the base of the truncated / mutated cases (skipped without them).
"""

from __future__ import annotations

import gzip
import io
import json
import os
import random
import shutil
import socket
import sqlite3
import tarfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
GOOD_KINETO = DATA / "kineto" / "tracelens_mi300x_vllm_decode_full_graph.json.gz"
NSYS_SQLITE = DATA / "nsys" / "nvfuser_h200_nsys2024.6.sqlite"
STATS_CSV = DATA / "nsys" / "llm-perf-opt_rtx5090_deepseek-ocr" / "decode_cuda_gpu_kern_sum.csv"
SMI = DATA / "metrics" / "nvidia-smi_h100_capture.txt"
PROM = DATA / "metrics" / "vllm_v1_metrics_idle.prom"


@dataclass(frozen=True)
class Case:
    name: str
    make: Callable[[Path], Path]  # writes into the folder; returns the path to hand over
    ok: bool = False  # a plausible input that must be analyzed (not refused)
    big: bool = False  # a bomb: slow to build, left out of the quick regression run
    cmds: tuple[str, ...] = ()  # only these commands (default: all the runner runs)
    budget_s: float | None = None  # built to be slow: answered or refused within this


def _kineto(events: list[dict], **top: object) -> bytes:
    return json.dumps({"traceEvents": events, **top}).encode()


def _k_events(dur: object = 5.0, ts: object = 1000.0, drop_dur: bool = False) -> list[dict]:
    k = {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": ts, "dur": dur,
         "args": {"device": 0, "stream": 7, "correlation": 1}}
    if drop_dur:
        del k["dur"]
    rt = {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 100,
          "tid": 100, "ts": 990.0, "dur": 4.0, "args": {"correlation": 1}}
    k2 = dict(k, ts=2000.0, args={"device": 0, "stream": 7, "correlation": 2})
    if drop_dur:
        k2.pop("dur", None)
    return [rt, k, k2]


def _write(name: str, data: bytes) -> Callable[[Path], Path]:
    def make(d: Path) -> Path:
        p = d / name
        p.write_bytes(data)
        return p
    return make


def _real(src: Path, name: str, mutate: Callable[[bytes], bytes]) -> Callable[[Path], Path]:
    def make(d: Path) -> Path:
        raw = src.read_bytes()
        if src.suffix == ".gz":
            raw = gzip.decompress(raw)
        p = d / name
        p.write_bytes(mutate(raw))
        return p
    return make


def _cut(frac: float) -> Callable[[bytes], bytes]:
    return lambda b: b[: int(len(b) * frac)]


def _cut_midline(b: bytes) -> bytes:
    """Cut inside the last line: drop its final 40% (not at a newline)."""
    body = b.rstrip(b"\n")
    last = body.rfind(b"\n")
    return body[: last + 1 + (len(body) - last) * 6 // 10]


def _deep(n: int, left: bytes = b"[", right: bytes = b"]", leaf: bytes = b"1") -> bytes:
    return left * n + leaf + right * n


def _deep_kineto_args(d: Path) -> Path:
    p = d / "deep_args.json"
    ev = json.dumps(_k_events()[1])[:-1] + ', "extra": ' + _deep(100_000).decode() + "}"
    p.write_text('{"traceEvents": [' + ev + "]}")
    return p


def _deep_kineto_meta(d: Path) -> Path:
    p = d / "deep_meta.json"
    p.write_text('{"deviceProperties": ' + _deep(100_000, b'{"a":', b"}").decode()
                 + ', "traceEvents": ' + json.dumps(_k_events()) + "}")
    return p


def _gz_bomb(name: str, prefix: bytes, fill: bytes, gib: float, suffix: bytes = b""
             ) -> Callable[[Path], Path]:
    def make(d: Path) -> Path:
        p = d / name
        chunk = fill * ((1 << 20) // len(fill))
        with gzip.open(p, "wb", compresslevel=9) as f:
            f.write(prefix)
            for _ in range(int(gib * 1024)):
                f.write(chunk)
            f.write(suffix)
        return p
    return make


def _speedscope_deep_evented(d: Path) -> Path:
    n = 50_000
    frames = [{"name": f"f{i}"} for i in range(n)]
    events = [{"type": "O", "frame": i, "at": i} for i in range(n)]
    events += [{"type": "C", "frame": i, "at": 2 * n - i} for i in reversed(range(n))]
    doc = {"$schema": "https://www.speedscope.app/file-format-schema.json",
           "shared": {"frames": frames},
           "profiles": [{"type": "evented", "name": "p", "unit": "milliseconds",
                         "startValue": 0, "endValue": 2 * n, "events": events}]}
    p = d / "deep_evented.speedscope.json"
    p.write_text(json.dumps(doc))
    return p


def _speedscope_deep_json(d: Path) -> Path:
    p = d / "deep.speedscope.json"
    p.write_text('{"$schema": "https://www.speedscope.app/file-format-schema.json", '
                 '"shared": {"frames": ' + _deep(100_000).decode() + "}, \"profiles\": []}")
    return p


def _folded_deep_ok(d: Path) -> Path:
    p = d / "deep_plausible.folded"
    stack = ";".join(f"mod.py:fn{i}" for i in range(1200))
    p.write_text(f"{stack} 100\nmain;leaf 5\n")
    return p


def _kineto_deep_ops_ok(d: Path) -> Path:
    """1,200 nested CPU ops (a deep but plausible Python stack) plus one kernel."""
    n = 1200
    evs = [{"ph": "X", "cat": "python_function", "name": f"fn{i}", "pid": 100, "tid": 100,
            "ts": 100.0 + i, "dur": 2 * n + 100.0 - 2 * i} for i in range(n)]
    evs += _k_events()
    p = d / "deep_ops.pt.trace.json"
    p.write_bytes(_kineto(evs))
    return p


def _sqlite_mutate(name: str, sql: str) -> Callable[[Path], Path]:
    def make(d: Path) -> Path:
        p = d / name
        shutil.copyfile(NSYS_SQLITE, p)
        con = sqlite3.connect(p)
        con.executescript(sql)
        con.commit()
        con.close()
        return p
    return make


def _sqlite_corrupt(d: Path) -> Path:
    p = d / "corrupt_pages.sqlite"
    raw = bytearray(NSYS_SQLITE.read_bytes())
    page = int.from_bytes(raw[16:18], "big") or 65536
    rnd = random.Random(18)
    for k in range(2, len(raw) // page, 3):  # every third page after the first two
        off = k * page + 8
        raw[off: off + 64] = rnd.randbytes(64)
    p.write_bytes(bytes(raw))
    return p


def _tar(name: str, members: list[tuple[str, bytes]], link: str | None = None
         ) -> Callable[[Path], Path]:
    def make(d: Path) -> Path:
        p = d / name
        with tarfile.open(p, "w") as t:
            for n, b in members:
                info = tarfile.TarInfo(n)
                info.size = len(b)
                t.addfile(info, io.BytesIO(b))
            if link:
                info = tarfile.TarInfo("link.json")
                info.type = tarfile.SYMTYPE
                info.linkname = link
                t.addfile(info)
        return p
    return make


def _tar_many(d: Path) -> Path:
    p = d / "many.tar"
    with tarfile.open(p, "w") as t:
        info = tarfile.TarInfo("x")
        for i in range(100_001):
            info.name = f"m{i}.txt"
            info.size = 0
            t.addfile(info)
    return p


def _zip_bomb(d: Path) -> Path:
    p = d / "bomb.zip"
    with zipfile.ZipFile(p, "w", zipfile.ZIP_DEFLATED) as z, z.open("zeros.json", "w",
                                                                   force_zip64=True) as f:
        chunk = b"\0" * (1 << 20)
        for _ in range(2048):  # 2 GiB
            f.write(chunk)
    return p


def _fifo(d: Path) -> Path:
    p = d / "fifo.pt.trace.json"
    os.mkfifo(p)
    return p


def _devzero(d: Path) -> Path:
    p = d / "zero.pt.trace.json"
    p.symlink_to("/dev/zero")
    return p


def _socket(d: Path) -> Path:
    p = d / "sock.json"
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(p))
    s.close()
    return p


def _dir_loop(d: Path) -> Path:
    f = d / "loop"
    f.mkdir()
    (f / "self").symlink_to(f, target_is_directory=True)
    (f / "x.pt.trace.json").write_bytes(b"{")
    return f


def _dangling(d: Path) -> Path:
    p = d / "gone.pt.trace.json"
    p.symlink_to(d / "nowhere")
    return p


def _bad_name(d: Path) -> Path:
    p = d / "bad\n\x1b[31mcrossview: error: forged.json"
    p.write_bytes(b"{not json")
    return p


def _nonutf8_name(d: Path) -> Path:
    """A good capture under a file name that is not UTF-8 (bytes ff fe): must be read."""
    p = d / os.fsdecode(b"cap\xff\xfe.pt.trace.json.gz")
    shutil.copyfile(GOOD_KINETO, p)
    return p


def _yaml_bomb(d: Path) -> Path:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    prev = "a"
    for c in "bcdefghi":
        lines.append(f"{c}: &{c} [" + ",".join([f"*{prev}"] * 9) + "]")
        prev = c
    lines.append(f"context: {{x: *{prev}}}")
    (d / "bundle.yaml").write_text("\n".join(lines) + "\n")
    return d / "bundle.yaml"


def _metrics_jsonl_deep(d: Path) -> Path:
    p = d / "nvml.jsonl"
    p.write_text('{"t": 1, "gpu": 0, "sm": 50, "x": ' + _deep(100_000).decode() + "}\n")
    return p


def _bench_deep(d: Path) -> Path:
    p = d / "bench.json"
    p.write_text('{"backend": "vllm", "completed": 10, "request_throughput": 1.0, '
                 '"x": ' + _deep(100_000).decode() + "}")
    return p


def _bench_hugeint(d: Path) -> Path:
    p = d / "bench_huge.json"
    p.write_text('{"backend": "vllm", "completed": ' + "9" * 400 + ', "duration": 1e999, '
                 '"request_throughput": 1.0, "total_input_tokens": 10}')
    return p


CASES: list[Case] = [
    # Kineto JSON
    Case("k_empty", _write("empty.pt.trace.json", b"")),
    Case("k_random", _write("random.pt.trace.json", random.Random(1).randbytes(4096))),
    Case("k_trunc10", _real(GOOD_KINETO, "t10.pt.trace.json", _cut(0.1))),
    Case("k_trunc50", _real(GOOD_KINETO, "t50.pt.trace.json", _cut(0.5))),
    Case("k_trunc99", _real(GOOD_KINETO, "t99.pt.trace.json", _cut(0.99))),
    Case("k_trunc_gz", _write("tgz.pt.trace.json.gz", b"")),  # replaced below
    # valid JSON: an unknown deep field beside the events is ignored (DuckDB's parser is not
    # recursive); the events are read
    Case("k_deep_args", _deep_kineto_args, ok=True),
    Case("k_deep_meta", _deep_kineto_meta),
    Case("k_deep_array", _write("deep_array.json", _deep(100_000))),
    Case("k_hugeint_devprops", _write("huge_devprops.json", _kineto(
        _k_events(), deviceProperties=[{"id": 0, "name": "H100", "totalGlobalMem": 10 ** 30,
                                         "numSms": 132}]))),
    Case("k_hugeint_ts", _write("huge_ts.json", _kineto(_k_events(ts=10 ** 30)))),
    Case("k_ts_inf", _write("ts_inf.json", _kineto(_k_events())
                            .replace(b'"ts": 1000.0', b'"ts": 1e999'))),
    Case("k_ts_text", _write("ts_text.json", _kineto(_k_events(ts="abc")))),
    Case("k_ts_2p63", _write("ts_2p63.json", _kineto(_k_events(ts=9.2e15)))),
    Case("k_dur_negative", _write("dur_neg.json", _kineto(_k_events(dur=-5.0)))),
    Case("k_dur_zero", _write("dur_zero.json", _kineto(_k_events(dur=0)))),
    Case("k_dur_missing", _write("dur_missing.json", _kineto(_k_events(drop_dur=True)))),
    Case("k_utf16", _write("utf16.json", json.dumps({"traceEvents": _k_events()})
                           .encode("utf-16"))),
    Case("k_surrogate_name", _write("surrogate.json", _kineto(_k_events())
                                    .replace(b'"gemm"', b'"gemm\\ud800x"'))),
    Case("k_latin1_name", _write("latin1.json", _kineto(_k_events())
                                 .replace(b'"gemm"', b'"gemm\xff\xfe"'))),
    Case("k_deep_ops_ok", _kineto_deep_ops_ok, ok=True),
    Case("k_gzbomb", _gz_bomb("bomb.pt.trace.json.gz", b'{"traceEvents": [', b" ", 2.0, b"]}"),
         big=True),
    # speedscope / folded / pprof
    Case("ss_deep_evented", _speedscope_deep_evented),
    Case("ss_deep_json", _speedscope_deep_json),
    Case("folded_deep_ok", _folded_deep_ok, ok=True),
    Case("folded_cut", _write("cut.folded", b"main;a;b 10\nmain;a;c 20\nmain;a;d")),
    Case("folded_gzbomb", _gz_bomb("bomb.folded.gz", b"", b"a;b 1\n", 2.0), big=True),
    Case("pprof_random", _write("random.pb.gz", gzip.compress(random.Random(2).randbytes(4096)))),
    Case("pprof_gzbomb", _gz_bomb("bomb.pb.gz", b"", b"\0", 2.0), big=True),
    # nsys SQLite
    Case("nsys_trunc", _real(NSYS_SQLITE, "trunc.sqlite", _cut(0.5))),
    Case("nsys_corrupt", _sqlite_corrupt),
    Case("nsys_start_text", _sqlite_mutate("start_text.sqlite",
         "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = start || ' ns' WHERE rowid % 2 = 0;")),
    Case("nsys_start_blob", _sqlite_mutate("start_blob.sqlite",
         "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = CAST(CAST(start AS TEXT) AS BLOB);")),
    Case("nsys_end_lt_start", _sqlite_mutate("end_lt.sqlite",
         "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET \"end\" = start - 1000;")),
    Case("nsys_2p63", _sqlite_mutate("s2p63.sqlite",
         "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = 9223372036854000000 + start % 1000000,"
         " \"end\" = 9223372036854000000 + start % 1000000 + 1000 WHERE rowid % 2 = 0;")),
    Case("nsys_view", _sqlite_mutate("view.sqlite",
         "DROP TABLE CUPTI_ACTIVITY_KIND_KERNEL;"
         "CREATE VIEW CUPTI_ACTIVITY_KIND_KERNEL AS SELECT 1 AS x;")),
    # CSV
    Case("stats_cut", _real(STATS_CSV, "cut_cuda_gpu_kern_sum.csv", _cut_midline)),
    Case("stats_bigfield", _real(STATS_CSV, "big_cuda_gpu_kern_sum.csv",
                                 lambda b: b.rstrip(b"\n") + b'"' + b"x" * 200_000 + b'"\n')),
    Case("stats_utf16", _real(STATS_CSV, "u16_cuda_gpu_kern_sum.csv",
                              lambda b: b.decode("utf-8").encode("utf-16"))),
    Case("csv_random", _write("random.csv", random.Random(3).randbytes(4096))),
    Case("ncu_magic", _write("magic.ncu-rep", b"NVIDIA Nsight Compute\0\0\0\0")),
    # metrics text
    Case("smi_cut", _real(SMI, "cut_smi.txt", _cut_midline)),
    Case("prom_cut", _real(PROM, "cut.prom", _cut_midline)),
    Case("prom_abc", _write("abc.prom", b"# TYPE x gauge\nx{a=\"1\"} abc\nvllm:y 1\n")),
    Case("jsonl_deep", _metrics_jsonl_deep),
    Case("bench_deep", _bench_deep),
    Case("bench_hugeint", _bench_hugeint),
    # archives
    Case("tar_empty", _tar("empty.tar", [])),
    Case("tar_traversal", _tar("trav.tar", [("../evil.json", b"{}")])),
    Case("tar_symlink", _tar("link.tar", [("a.txt", b"x")], link="/etc/passwd")),
    Case("tar_many", _tar_many, big=True),
    Case("zip_bomb", _zip_bomb, big=True),
    # not regular files, names
    Case("fifo", _fifo),
    Case("dev_zero", _devzero),
    Case("socket", _socket),
    Case("dir_loop", _dir_loop),
    Case("dangling", _dangling),
    Case("bad_name", _bad_name),
    Case("nonutf8_name_ok", _nonutf8_name, ok=True),
    # bundle
    Case("yaml_bomb", _yaml_bomb, cmds=("inventory",)),
]


def _trunc_gz(d: Path) -> Path:
    p = d / "tgz.pt.trace.json.gz"
    raw = GOOD_KINETO.read_bytes()
    p.write_bytes(raw[: len(raw) // 2])
    return p


CASES[[c.name for c in CASES].index("k_trunc_gz")] = Case("k_trunc_gz", _trunc_gz)


def by_name(name: str) -> Case:
    return next(c for c in CASES if c.name == name)


def _second_pass() -> list[Case]:
    from .corpus_readers import CASES as readers  # issue 43: the readers' second pass

    return readers


CASES += _second_pass()
