"""Are the answers unchanged? `analyze --format json` of every shared capture, at a git ref
and in this working tree, compared byte for byte.

    python bench/same_answers.py [--ref main] [--data ../shared/data] [--keep DIR]
    python bench/same_answers.py --synthesize [--ref main]   # `synthesize` of bundles

The ref's `src/` is extracted with `git archive` into a temp folder and run with the same
interpreter through PYTHONPATH, so only the code differs. Per capture: `same` (identical
bytes), `same content, key order differs` (equal as sorted JSON: e.g. the vLLM metrics
file, whose metric order varies from run to run even at one commit), `DIFF`, or the exit
codes when either run failed differently. Exit 1 when any capture is DIFF.
With --synthesize: `synthesize --format json` of evidence bundles built in a temp folder
from the shared captures (BUNDLES; each side a fresh copy, `generated_at` masked).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def captures(data: Path) -> list[Path]:
    return sorted(p for d in ("kineto", "nsys", "ncu", "metrics") if (data / d).is_dir()
                  for p in (data / d).iterdir())


def run(src: Path, capture: Path, out: Path) -> int:
    env = {**os.environ, "PYTHONPATH": str(src)}
    return subprocess.run([sys.executable, "-m", "crossview", "analyze", str(capture),
                           "--format", "json", "-o", str(out)], env=env, cwd=REPO,
                          capture_output=True, timeout=1800).returncode


# evidence bundles made of shared captures: name → (files under --data, bundle.yaml text)
BUNDLES = {
    "h100_trace_smi": (["kineto/tracelens_h100_hf_qwen1.5_0.5b_forward.json.gz",
                        "metrics/nvidia-smi_h100_capture.txt"],
                       "context: {model: Qwen/Qwen1.5-0.5B-Chat, hardware: H100, engine: "
                       "transformers}\n"),
    "b200_trace_vllm_metrics": (["kineto/tracelens_b200_vllm_eager_prefill_tp8.json.gz",
                                 "metrics/vllm_v1_metrics_idle.prom"],
                                "context: {hardware: B200, engine: vllm}\n"),
    "v100_resnet_trace_dcgm": (["kineto/kineto_v100_resnet50_workers0.pt.trace.json.gz",
                                "metrics/dcgm-exporter_t4.prom"], "context: {}\n"),
    "rtx5090_nsys_stats_ncu": (["nsys/llm-perf-opt_rtx5090_deepseek-ocr/"
                                "decode_cuda_gpu_kern_sum.csv",
                                "ncu/llm-perf-opt_rtx5090_deepseek-ocr/"
                                "kernel_0001_ncu.details.csv"],
                               "context: {hardware: RTX 5090, gpu: NVIDIA GeForce RTX 5090}\n"),
}


def synthesize(src: Path, data: Path, name: str, folder: Path, out: Path) -> int:
    """One side's `synthesize --format json` of bundle `name`, built afresh in `folder` (the
    same folder for both sides: the bundle's path is in the JSON); its `generated_at` stamp
    (also in the file names it cites) replaced by a placeholder."""
    files, yaml = BUNDLES[name]
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for f in files:
        shutil.copyfile(data / f, folder / Path(f).name)
    (folder / "bundle.yaml").write_text(yaml)
    env = {**os.environ, "PYTHONPATH": str(src)}
    p = subprocess.run([sys.executable, "-m", "crossview", "synthesize", str(folder),
                        "--format", "json"], env=env, cwd=REPO, capture_output=True,
                       text=True, timeout=1800)
    if p.stdout.strip():
        stamp = json.loads(p.stdout).get("generated_at")
        out.write_text(p.stdout.replace(stamp, "<generated_at>") if stamp else p.stdout)
    return p.returncode


def export_src(ref: str, dest: Path) -> Path:
    """The ref's `src/` extracted under `dest` (git archive): the folder to put on PYTHONPATH."""
    dest.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "archive", ref, "src"], cwd=REPO, check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest / "src"


def compare(a: Path, b: Path) -> str:
    if not (a.exists() and b.exists()):
        return "same (no JSON either side)" if a.exists() == b.exists() else "DIFF (one side)"
    if a.read_bytes() == b.read_bytes():
        return "same"
    ja, jb = json.loads(a.read_text()), json.loads(b.read_text())
    if json.dumps(ja, sort_keys=True) == json.dumps(jb, sort_keys=True):
        return "same content, key order differs"
    return "DIFF"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ref", default="main")
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--keep", type=Path, help="write the JSON files here (else a temp dir)")
    ap.add_argument("--synthesize", action="store_true",
                    help="compare `synthesize` of the BUNDLES instead of `analyze`")
    a = ap.parse_args(argv)
    root = a.keep or Path(tempfile.mkdtemp(prefix="crossview-same-"))
    base = export_src(a.ref, root / "ref").parent
    bad = 0
    if a.synthesize:
        for name in BUNDLES:
            outs = [root / side / f"{name}.json" for side in ("at_ref", "here")]
            for o in outs:
                o.parent.mkdir(exist_ok=True)
            rc = (synthesize(base / "src", a.data, name, root / "bundles" / name, outs[0]),
                  synthesize(REPO / "src", a.data, name, root / "bundles" / name, outs[1]))
            verdict = compare(*outs) if rc[0] == rc[1] else f"DIFF (exit {rc[0]} → {rc[1]})"
            bad += verdict.startswith("DIFF")
            print(f"{verdict:34s} bundle {name} (exit {rc[1]})")
        print(f"{bad} bundle(s) differ from {a.ref}; JSON in {root}")
        return 1 if bad else 0
    for cap in captures(a.data):
        outs = [root / side / f"{cap.parent.name}__{cap.name}.json" for side in ("at_ref", "here")]
        for o in outs:
            o.parent.mkdir(exist_ok=True)
        rc = (run(base / "src", cap, outs[0]), run(REPO / "src", cap, outs[1]))
        verdict = compare(*outs) if rc[0] == rc[1] else f"DIFF (exit {rc[0]} → {rc[1]})"
        bad += verdict.startswith("DIFF")
        print(f"{verdict:34s} {cap.parent.name}/{cap.name} (exit {rc[1]})")
    print(f"{bad} capture(s) differ from {a.ref}; JSON in {root}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
