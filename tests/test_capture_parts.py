"""Capture pieces that need no torch: the host CPU sampler + reader, bundle.yaml, the ncu step
(command line; ncu absent; a fake `ncu` TEST DOUBLE for the success path), the child's
environment, and `crossview capture plan` (shell syntax, Kubernetes YAML)."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

from conftest import run_cli
from crossview.capture import host_sampler, ncu
from crossview.capture.bundle_file import BundleMeta
from crossview.capture.child import ENV_DIR, ENV_SCHEDULE
from crossview.capture.machine import GpuInfo, MachineFacts
from crossview.capture.plan import build, render_sh
from crossview.capture.plan_k8s import render_k8s
from crossview.capture.profiler import Schedule
from crossview.capture.script import HOOK_DIR, child_env
from crossview.core.context import Context
from crossview.sources.counters import host_jsonl
from crossview.sources.registry import pick_reader
from crossview.store.store import Store
from crossview.synthesis.bundle import TOP_KEYS, load
from test_nvml_sampler import FakeNVML


def test_cpu_shares_by_hand() -> None:
    # SYNTHETIC /proc/stat lines. Deltas: user 60, nice 10, system 20, idle 80, iowait 30,
    # irq/softirq/steal 0 → total 200; busy = 200 - 80 - 30 = 90 → 45 %.
    prev = host_sampler.cpu_times("cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 1 2 3 4 5 6 7 8\n")
    cur = host_sampler.cpu_times("cpu  160 10 70 880 80 0 0 0 0 0\n")
    assert host_sampler.shares(prev, cur) == {"cpu_util_pct": 45.0, "cpu_user_pct": 35.0,
                                              "cpu_system_pct": 10.0, "cpu_iowait_pct": 15.0}
    assert host_sampler.shares(cur, cur) is None  # no time passed: no sample
    assert host_sampler.mem_used_mib("MemTotal: 2048000 kB\nMemAvailable: 1024000 kB\n") \
        == 1000.0


@pytest.mark.skipif(not host_sampler.PROC_STAT.exists(), reason="no /proc/stat (not Linux)")
def test_host_sampler_reads_back(tmp_path: Path) -> None:
    path = tmp_path / "host_cpu.jsonl"
    stop = threading.Event()
    with path.open("w") as f:
        t = threading.Thread(target=host_sampler.run, args=(f, 50, stop))
        t.start()
        time.sleep(0.3)
        stop.set()
        t.join()
    lines = path.read_text().splitlines()
    assert pick_reader(path).kind == host_jsonl.KIND
    st = Store()
    assert host_jsonl.read(path, st).status == "ok"
    n = len(lines) - 1
    assert n >= 3
    got = dict(st.sql("SELECT metric, count(*) FROM metrics GROUP BY 1").fetchall())
    assert got == {**{m: n for m in ("host_cpu_util", "host_cpu_user", "host_cpu_system",
                                     "host_cpu_iowait", "host_mem_used")},
                   "host_core_util": n * (os.cpu_count() or 0)}  # one row per core per tick
    assert st.sql("SELECT DISTINCT unit, device FROM metrics WHERE metric = 'host_cpu_util'"
                  ).fetchall() == [("%", None)]


def test_host_reader_rejects_header_only(tmp_path: Path) -> None:
    p = tmp_path / "h.jsonl"
    p.write_text('{"format": "crossview-host", "version": 1}\n')
    with pytest.raises(Exception, match="no host CPU samples"):
        host_jsonl.read(p, Store())


def test_bundle_yaml_follows_the_convention(tmp_path: Path) -> None:
    meta = BundleMeta(command="python x.py")
    meta.add_machine(MachineFacts("node7", [GpuInfo(0, "NVIDIA H200", "GPU-a"),
                                            GpuInfo(1, "NVIDIA H200", "GPU-b")],
                                  driver="570.86", cuda_driver="12.8", nvml_ok=True))
    meta.set("model", "m")
    meta.set("tp", None)  # unknown: omitted, not written
    meta.note("x went wrong")
    meta.artifacts["traces/a.pt.trace.json.gz"] = {"phase": "decode", "rank": 0}
    meta.write(tmp_path)
    raw = yaml.safe_load((tmp_path / "bundle.yaml").read_text())
    assert set(raw) <= set(TOP_KEYS)
    assert set(raw["context"]) - {"extra"} <= set(Context.field_names())
    assert raw["context"]["gpu"] == "NVIDIA H200" and raw["context"]["gpu_count"] == 2
    assert raw["context"]["gpu_uuids"] == ["GPU-a", "GPU-b"] and "tp" not in raw["context"]
    assert raw["context"]["extra"] == {"driver": "570.86", "cuda_driver": "12.8"}
    assert raw["capture"]["problems"] == ["x went wrong"]
    assert raw["capture"]["tool"].startswith("crossview capture ")
    b = load(tmp_path)
    assert b.warnings == [] and b.context.gpu_count == 2


def test_ncu_command_line(tmp_path: Path) -> None:
    p = ncu.plan(tmp_path / "b", "gemm|flash", 5, tmp_path / "w")
    assert p.profile_cmd("ncu", ["python", "x.py", "--n", "1"]) == [
        "ncu", "--set", "full", "--kernel-name", "regex:gemm|flash", "--launch-count", "5",
        "--target-processes", "all", "-f", "-o", str(tmp_path / "w" / "profile"),
        "python", "x.py", "--n", "1"]
    assert p.export_cmd("ncu") == ["ncu", "--import", f"{tmp_path / 'w' / 'profile'}.ncu-rep",
                                   "--csv", "--page", "details"]
    assert p.csv == tmp_path / "b" / "ncu" / "profile.details.csv"


def test_ncu_absent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)
    res = ncu.run(tmp_path, ["python", "x.py"], "gemm", 3)
    assert res.files == [] and not (tmp_path / "ncu").exists()
    assert res.message == ("ncu not on PATH: the Nsight Compute step (--ncu-kernels 'gemm') "
                           "was skipped; the bundle has no ncu export")


FAKE_NCU = """#!{python}
# TEST DOUBLE of the ncu CLI: `-o REP … CMD` writes REP.ncu-rep; `--import REP --csv` prints CSV
import sys
a = sys.argv[1:]
if "--import" in a:
    print('"ID","Kernel Name","Section Name","Metric Name","Metric Unit","Metric Value"')
    print('"0","ampere_sgemm","GPU Speed Of Light Throughput","Duration","us","12.5"')
else:
    open(a[a.index("-o") + 1] + ".ncu-rep", "wb").write(b"rep")
"""


def test_ncu_with_a_fake_ncu(tmp_path: Path) -> None:
    fake = tmp_path / "bin" / "ncu"
    fake.parent.mkdir()
    fake.write_text(FAKE_NCU.format(python=sys.executable))
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    bundle, keep = tmp_path / "b", tmp_path / "keep" / "k.ncu-rep"
    res = ncu.run(bundle, ["python", "x.py"], "sgemm", 2, ncu=str(fake), keep_rep=keep)
    assert res.problems == [] and res.files == ["ncu/profile.details.csv"]
    assert "ampere_sgemm" in (bundle / "ncu" / "profile.details.csv").read_text()
    assert keep.read_bytes() == b"rep"
    assert not list(bundle.rglob("*.ncu-rep"))  # never inside the bundle: read twice


def test_child_env(tmp_path: Path) -> None:
    env = child_env(tmp_path, Schedule(2, 1, 4, 1), {"PYTHONPATH": "/x", "HOME": "/h"})
    parts = env["PYTHONPATH"].split(os.pathsep)
    assert parts[0] == str(HOOK_DIR) and parts[-1] == "/x"
    assert (HOOK_DIR / "sitecustomize.py").exists()
    assert env[ENV_DIR] == str(tmp_path.resolve()) and env[ENV_SCHEDULE] == "2,1,4,1"
    assert Schedule.from_env("2,1,4,1") == Schedule(2, 1, 4, 1)
    assert Schedule.from_env("whole").whole and env["HOME"] == "/h"


def test_plan_sh() -> None:
    text = render_sh(build("vllm", {"model": "Qwen/Qwen2.5-0.5B", "tp": 2,
                                    "tokenizer": "/models/qwen-tok"}))
    if shutil.which("bash"):
        assert subprocess.run(["bash", "-n"], input=text, text=True).returncode == 0
    ia, ib, ic = (text.index(f"\n# ({x}) ") for x in "ABC")
    a, b, c = text[ia:ib], text[ib:ic], text[ic:]
    assert "VLLM_TORCH_PROFILER_DIR=/captures/A/traces vllm serve Qwen/Qwen2.5-0.5B " \
           "--tensor-parallel-size 2" in a
    assert "crossview capture vllm --url http://127.0.0.1:8000 -o /captures/A" in a
    assert "--tokenizer /models/qwen-tok" in a and "# (D) DCGM" in text
    assert "# scrape_time" in a and "9400/metrics" in a
    srv_b = next(ln for ln in b.splitlines() if ln.startswith("( mkdir"))  # B's server line
    assert "nsys profile" in srv_b and "--cuda-graph-trace=node" in srv_b
    assert "VLLM_TORCH_PROFILER_DIR" not in srv_b and "ncu " not in srv_b  # no other injection
    assert '--kernel-name regex:"gemm|flash|attention|fused_moe" --launch-count 3' in c
    assert "ncu --import /captures/raw/C-kernels.ncu-rep --csv --page details" in c


def test_plan_k8s_parses() -> None:
    docs = list(yaml.safe_load_all(render_k8s(build("vllm", {"tp": 4}))))
    assert [d["kind"] for d in docs] == ["Job"] * 3
    assert [d["metadata"]["labels"]["crossview/phase"] for d in docs] == ["A", "B", "C"]
    for d in docs:
        spec = d["spec"]["template"]["spec"]
        names = [c["name"] for c in spec["containers"]]
        assert names == ["server", "client"] and spec["restartPolicy"] == "Never"
        for c in spec["containers"]:
            assert c["command"][:2] == ["bash", "-lc"] and c["command"][2]
        assert spec["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == 4
    srv_b = docs[1]["spec"]["template"]["spec"]["containers"][0]["command"][2]
    assert "--cuda-graph-trace=node" in srv_b
    cli_a = docs[0]["spec"]["template"]["spec"]["containers"][1]["command"][2]
    assert "crossview capture vllm" in cli_a and "/models/tokenizer" in cli_a


def test_plan_cli_unknown_engine() -> None:
    r = run_cli("capture", "plan", "--engine", "nope", timeout=60)
    assert r.returncode == 2
    assert r.stderr.strip() == "crossview: error: --engine 'nope': no capture plan (known: vllm)"


class _NVML(FakeNVML):
    """The SYNTHETIC NVML stand-in of test_nvml_sampler.py plus the system queries."""

    def nvmlSystemGetDriverVersion(self) -> str: return "570.86.15"
    def nvmlSystemGetCudaDriverVersion(self) -> int: return 12080


def test_samplers_with_gpus(tmp_path: Path) -> None:
    from crossview.capture.machine import probe
    from crossview.capture.samplers import NVML_FILE, Samplers
    from crossview.sources.counters import nvml_jsonl

    facts = probe(_NVML())
    assert (facts.driver, facts.cuda_driver) == ("570.86.15", "12.8")
    assert [(g.index, g.name, g.uuid) for g in facts.gpus] == [
        (0, "NVIDIA H200", "GPU-0"), (1, "NVIDIA H200", "GPU-1")]
    s = Samplers(tmp_path, 20, 50, gpu=True, nv=_NVML()).start()
    time.sleep(0.3)
    s.stop()
    assert NVML_FILE in s.files and s.problems == []
    st = Store()
    assert nvml_jsonl.read(tmp_path / NVML_FILE, st).status == "ok"
    per_gpu = st.sql("SELECT device, count(*), avg(value) FROM metrics WHERE metric ="
                     " 'gpu_util' GROUP BY 1 ORDER BY 1").fetchall()
    assert [(d, v) for d, _, v in per_gpu] == [(0, 90.0), (1, 91.0)]  # the stand-in's values
    assert per_gpu[0][1] == per_gpu[1][1] >= 5  # every tick samples both GPUs (20 ms, 0.3 s)
