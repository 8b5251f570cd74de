"""`crossview.capture(...)` and `crossview capture -- python …` on a tiny torch workload on CPU
(this machine has no GPU: the bundle must be CPU-only and say so). The model is the tiny decoder
of examples/capture_cpu_decode.py. Trace contents are checked independently (gzip + json on the
written file), then crossview must read the bundle back."""

from __future__ import annotations

import gzip
import importlib.util
import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

torch = pytest.importorskip("torch", reason="torch not installed: capture tests need it "
                            "(pip install -e '.[test]' pins torch==2.13.0)")

from conftest import run_cli  # noqa: E402
from crossview.analysis import analyze  # noqa: E402
from crossview.synthesis.bundle import TOP_KEYS, load  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def _example():
    spec = importlib.util.spec_from_file_location(
        "capture_cpu_decode", REPO / "examples" / "capture_cpu_decode.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _events(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return json.load(f)["traceEvents"]


def _names(events: list[dict], prefix: str) -> list[str]:
    return sorted(e["name"] for e in events if str(e.get("name", "")).startswith(prefix))


def test_in_process_capture_of_tiny_decode(tmp_path: Path) -> None:
    import crossview
    ex = _example()
    torch.manual_seed(0)
    model = ex.TinyDecoder().eval()
    prompt = torch.randint(0, ex.VOCAB, (ex.BATCH, ex.PROMPT_LEN))
    out = tmp_path / "bundle"
    with torch.inference_mode():
        logits, caches = model(prompt, None)
        token = ex.greedy(logits)
        with crossview.capture(out, wait=1, warmup=1, active=2, context={"model": "tiny"},
                               regime="decode") as cap:
            for _ in range(6):
                with torch.profiler.record_function("decode_step"):
                    logits, caches = model(token, caches)
                    token = ex.greedy(logits)
                    token[0, 0].item()
                cap.step()
    traces = sorted((out / "traces").glob("*.pt.trace.json.gz"))
    assert len(traces) == 1
    ev = _events(traces[0])
    # the schedule skipped 1 wait + 1 warm-up step and recorded exactly the 2 active ones
    assert _names(ev, "ProfilerStep#") == ["ProfilerStep#2", "ProfilerStep#3"]
    assert _names(ev, "decode_step") == ["decode_step", "decode_step"]
    assert any("Input Dims" in (e.get("args") or {}) for e in ev)  # record_shapes
    assert any(e.get("cat") == "python_function" for e in ev)  # with_stack
    assert not any(e.get("cat") == "kernel" for e in ev)  # CPU only
    cpu_ops = sum(1 for e in ev if e.get("cat") == "cpu_op")

    meta = yaml.safe_load((out / "bundle.yaml").read_text())
    assert set(meta) <= set(TOP_KEYS)
    ctx = meta["context"]
    assert ctx["hostname"] == socket.gethostname() and ctx["model"] == "tiny"
    assert ctx["extra"]["torch"] == torch.__version__ and ctx["extra"]["regime"] == "decode"
    assert any(p.startswith("CPU-only trace") for p in meta["capture"]["problems"])
    b = load(out)
    assert b.warnings == [] and b.context.hostname == socket.gethostname()

    host = (out / "metrics" / "host_cpu.jsonl").read_text().splitlines()
    assert json.loads(host[0])["format"] == "crossview-host" and len(host) >= 2

    a = analyze([out])
    assert a.rejected == []
    assert a.views.store.sql("SELECT count(*) FROM host_ops WHERE kind = 'op'"
                             ).fetchall()[0][0] == cpu_ops  # every cpu_op read back
    md = run_cli("analyze", out, timeout=120)
    assert md.returncode == 0, md.stderr
    assert "CPU-only capture" in md.stdout and "CPU cross-check" in md.stdout
    # inventory reads bundle.yaml; on a GPU-less machine it rightly flags the trace as having
    # no GPU kernel (exit 2) while the host samples validate
    inv = run_cli("inventory", out, timeout=120)
    assert inv.returncode == 2 and "Traceback" not in inv.stderr
    rows = {ln.split("|")[1].strip(" `"): ln for ln in inv.stdout.splitlines()
            if ln.startswith("| `")}
    assert rows["metrics/host_cpu.jsonl"].rstrip(" |").endswith("valid")
    assert "no-gpu-events" in rows[traces[0].relative_to(out).as_posix()]
    assert "hostname " + socket.gethostname() in inv.stdout


def _script(tmp_path: Path, body: str) -> Path:
    p = tmp_path / "work.py"
    p.write_text(body)
    return p


TRAIN = """
import torch
m = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 16))
opt = torch.optim.SGD(m.parameters(), lr=0.1)
for _ in range(6):
    loss = m(torch.randn(4, 16)).pow(2).mean()
    opt.zero_grad(); loss.backward(); opt.step()
"""

INFER = """
import torch, crossview.capture
m = torch.nn.Linear(16, 16)
with torch.inference_mode():
    for _ in range(5):
        with torch.profiler.record_function("infer_step"):
            m(torch.randn(2, 16))
        crossview.capture.step()
"""


def _capture(out: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli("capture", "-o", out, *args, timeout=300)


def test_script_capture_counts_optimizer_steps(tmp_path: Path) -> None:
    out = tmp_path / "b"
    r = _capture(out, "--wait", "1", "--warmup", "1", "--active", "2", "--", sys.executable,
                 str(_script(tmp_path, TRAIN)))
    assert r.returncode == 0, r.stderr
    traces = sorted((out / "traces").glob("*.pt.trace.json.gz"))
    assert len(traces) == 1
    assert _names(_events(traces[0]), "ProfilerStep#") == ["ProfilerStep#2", "ProfilerStep#3"]
    meta = yaml.safe_load((out / "bundle.yaml").read_text())
    rel = traces[0].relative_to(out).as_posix()
    assert meta["artifacts"][rel]["note"].endswith("6 step(s) seen")
    assert meta["context"]["extra"]["torch"] == torch.__version__
    assert not (out / ".crossview-capture").exists()  # child status folded in, removed


def test_script_capture_explicit_steps_and_whole(tmp_path: Path) -> None:
    out = tmp_path / "b"
    r = _capture(out, "--wait", "0", "--warmup", "1", "--active", "3", "--", sys.executable,
                 str(_script(tmp_path, INFER)))
    assert r.returncode == 0, r.stderr
    (trace,) = (out / "traces").glob("*.pt.trace.json.gz")
    assert _names(_events(trace), "infer_step") == ["infer_step"] * 3
    out2 = tmp_path / "b2"
    r = _capture(out2, "--whole", "--", sys.executable, str(_script(tmp_path, INFER)))
    assert r.returncode == 0, r.stderr
    (trace,) = (out2 / "traces").glob("*.pt.trace.json.gz")
    assert _names(_events(trace), "infer_step") == ["infer_step"] * 5  # no schedule: all 5


def test_script_capture_failing_command_and_no_torch(tmp_path: Path) -> None:
    out = tmp_path / "b"
    r = _capture(out, "--", sys.executable, "-c", "import sys; sys.exit(3)")
    assert r.returncode == 3
    problems = yaml.safe_load((out / "bundle.yaml").read_text())["capture"]["problems"]
    assert "command exited with status 3" in problems
    assert any(p.startswith("no torch-profiler trace written") for p in problems)


def test_script_capture_unknown_command(tmp_path: Path) -> None:
    r = _capture(tmp_path / "b", "--", "no-such-command-xyz")
    assert r.returncode == 2
    assert r.stderr.strip() == "crossview: error: no-such-command-xyz: command not found"
