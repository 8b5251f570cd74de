"""Run every hostile case through crossview commands and count what went wrong (issue 18).

    PYTHONPATH=src .venv/bin/python -m tests.hostile.run [--big] [--cmd analyze,inventory]
                                                         [--only NAME,...] [--timeout 60]
    PYTHONPATH=src .venv/bin/python -m tests.hostile.run --mcp [--tools analyze,...]
                                     (the same corpus through the MCP tools: mcp_run.py)

Each case: its bad input beside a good capture (the small MI300X Kineto trace), one process
per command under a wall-clock timeout and an address-space cap. Outcomes counted:
  internal  exit 3 / "internal error" / a traceback reached the user
  memory    MemoryError / out of memory / killed
  hang      ran past the timeout
  silent    exit 0 and the bad input neither refused nor flagged (no error line naming it,
            status ok / valid) — or, for a plausible input (ok=True), it was refused
            (set apart as another run beside the good capture, naming --each, is no refusal)
  good_lost the good capture beside it was not analyzed
  forged    more `crossview: error:` lines than inputs (a file name forged a line)
  side_effect  a file appeared or changed beside the inputs (a SQLite -wal/-shm), or a
            temp file was left in TMPDIR (each command runs with a fresh one)
A case built to be slow (`budget_s`) whose command uses more CPU seconds than its budget
counts as a hang (CPU, not wall time: other work on a shared machine must not decide it).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from .corpus import CASES, GOOD_KINETO, Case

REPO = Path(__file__).resolve().parents[2]
AS_CAP = 6 << 30


def _limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (AS_CAP, AS_CAP))


def _cpu_s() -> float:
    """CPU seconds (user + system) of the finished children so far."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _cli(args: list[str], timeout: float, tmp: str | None = None
         ) -> tuple[int | None, str, str]:
    # HOSTILE_SRC: another source tree (e.g. `git archive <base> src` unpacked) for a baseline
    src = os.environ.get("HOSTILE_SRC") or str(REPO / "src")
    env = dict(os.environ, PYTHONPATH=src, CROSSVIEW_MEMORY_LIMIT="500MB")
    if tmp is not None:
        env["TMPDIR"] = tmp
    try:
        p = subprocess.run([sys.executable, "-m", "crossview", "--quiet", *args],
                           capture_output=True, timeout=timeout, env=env, cwd=REPO,
                           preexec_fn=_limit)
    except subprocess.TimeoutExpired:
        return None, "", ""
    return (p.returncode, p.stdout.decode("utf-8", "replace"),
            p.stderr.decode("utf-8", "replace"))


def _mentioned(bad: Path, err: str) -> bool:
    return bad.name[:12] in err or repr(bad.name)[1:13] in err or bad.name[:3] in err and (
        "\\n" in err or "\\x1b" in err)


def _snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    """(size, mtime ns) of every file under `folder` (links not followed)."""
    out: dict[str, tuple[int, int]] = {}
    for dirpath, _, files in os.walk(folder):
        for n in files:
            p = os.path.join(dirpath, n)
            try:
                st = os.lstat(p)
            except OSError:
                continue
            out[p] = (st.st_size, st.st_mtime_ns)
    return out


def _one_run_each(arts: list[dict]) -> bool:
    """A plausible capture of another run (its own clock, the same rank twice) beside the good
    one is never merged (decision 0862): one of the two is analyzed, the other set apart in a
    line naming `--each` — an answer, neither a refusal nor a lost capture."""
    kept = [a for a in arts if a.get("status") == "ok"]
    apart = [a for a in arts if a.get("status") == "other-run"]
    return (len(kept) == len(apart) == 1 == len(arts) - 1
            and "--each" in " ".join(apart[0].get("problems", [])))


def judge(case: Case, cmd: str, bad: Path, good: Path, rc: int | None, out: str, err: str
          ) -> list[str]:
    if rc is None:
        return ["hang"]
    found: list[str] = []
    if rc == 3 or "internal error" in err or "Traceback" in err or "Traceback" in out:
        found.append("internal")
    if "MemoryError" in err or "out of memory" in err or rc in (-9, 137):
        found.append("memory")
    if "\x1b" in err or any(ln and not ln.startswith("crossview: ")
                             for ln in err.splitlines()):
        found.append("forged")  # a file name put out an escape or a line of its own
    if found:
        return found
    try:
        doc = json.loads(out) if out.strip() else {}
    except (json.JSONDecodeError, RecursionError):
        doc = {}
    arts = doc.get("artifacts", []) if isinstance(doc, dict) else []
    if cmd not in ("analyze", "inventory"):  # no artifact list: the exit and stderr decide
        if case.ok:  # kernels/synthesize refuse a lone trace by their own precondition:
            return []  # only internal errors, MemoryError, hangs and forged lines count
        return [] if _mentioned(bad, err) or rc != 0 else ["silent"]
    good_arts = [a for a in arts if Path(a.get("path", "")).name == good.name]
    esc = bad.name.encode("utf-8", "backslashreplace").decode("utf-8")  # as crossview shows
    shown = "".join(c if c.isprintable() else repr(c)[1:-1] for c in esc)  # guard.show
    bad_arts = [a for a in arts if Path(a.get("path", "")).name in (bad.name, esc, shown)
                or bad.is_dir() and bad.name in a.get("path", "")]
    if case.ok and _one_run_each(good_arts + bad_arts):
        return found
    if not any(a.get("status") == "ok" or a.get("valid") is True for a in good_arts):
        found.append("good_lost")
    flagged = _mentioned(bad, err) or any(
        a.get("status") not in (None, "ok") or a.get("valid") is False or a.get("warnings")
        for a in bad_arts)
    if cmd == "inventory" and isinstance(doc, dict):
        flagged = flagged or any(bad.name[:12] in json.dumps(doc.get(k, ""))
                                 for k in ("warnings", "other_files"))
    if case.ok:
        if rc != 0 or flagged or not bad_arts:
            found.append("silent")  # a plausible input refused: counted as a wrong answer
    elif not flagged:
        found.append("silent")
    return found


def run_case(case: Case, cmds: list[str], timeout: float) -> dict[str, list[str]]:
    d = Path(tempfile.mkdtemp(prefix=f"hostile-{case.name}-"))
    try:
        try:
            bad = case.make(d)
        except FileNotFoundError:
            return {}
        good = d / GOOD_KINETO.name
        shutil.copyfile(GOOD_KINETO, good)
        res: dict[str, list[str]] = {}
        for cmd in cmds:
            if case.cmds and cmd not in case.cmds:
                continue
            pair = [str(d)] if bad.is_dir() or bad.name == "bundle.yaml" else [str(bad),
                                                                                str(good)]
            out_dir = Path(tempfile.mkdtemp(prefix="hostile-out-"))
            tmp = Path(tempfile.mkdtemp(prefix="hostile-tmp-"))
            before = _snapshot(d)
            args = {
                "analyze": ["analyze", "--format", "json", *pair],
                "inventory": ["inventory", "--format", "json", str(d)],
                "report": ["report", "-o", str(out_dir / "r.html"), *pair],
                "export": ["export", "--to", "perfetto", "-o", str(out_dir / "t.json"), *pair],
                "kernels": ["kernels", *pair],
                "ingest": ["ingest", "--lake", str(out_dir / "lake"), *pair],
                "synthesize": ["synthesize", str(d)],
                "diff": ["diff", str(good), pair[0]],
            }[cmd]
            t0, c0 = time.monotonic(), _cpu_s()
            rc, out, err = _cli(args, timeout, str(tmp))
            # the budget is on CPU time: on a shared machine the wall clock measures the
            # neighbours (a real hang still meets the wall-clock timeout)
            took, cpu = time.monotonic() - t0, _cpu_s() - c0
            shutil.rmtree(out_dir, ignore_errors=True)
            res[cmd] = judge(case, cmd, bad, good, rc, out, err)
            if case.budget_s is not None and rc is not None and cpu > case.budget_s:
                res[cmd].insert(0, "hang")
            left = [p.name for p in tmp.iterdir()]
            shutil.rmtree(tmp, ignore_errors=True)
            # synthesize writes its findings into the bundle by design
            if left or (cmd != "synthesize" and _snapshot(d) != before):
                res[cmd].insert(0, "side_effect")
                err = f"left in TMPDIR: {left[:3]}; " + err if left else err
            if res[cmd]:
                first = err.strip().splitlines()[:1]
                res[cmd].append(f"rc={rc} {took:.1f}s ({cpu:.1f}s CPU) "
                               f"{first[0][:160] if first else ''}")
        return res
    finally:
        shutil.rmtree(d, ignore_errors=True)


def main() -> int:
    sys.setrecursionlimit(20_000)  # crossview's JSON of a deep (plausible) call tree
    ap = argparse.ArgumentParser()
    ap.add_argument("--big", action="store_true", help="include the bombs (slow to build)")
    ap.add_argument("--cmd", default="analyze,inventory",
                    help="any of analyze,inventory,report,export,kernels,ingest,synthesize,diff")
    ap.add_argument("--only", default="")
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--mcp", action="store_true", help="through one MCP stdio server's tools")
    ap.add_argument("--tools", default="analyze,inventory,kernels,query,hot_traces",
                    help="with --mcp: the tools called on each case")
    a = ap.parse_args()
    only = set(filter(None, a.only.split(",")))
    cases = [c for c in CASES if (a.big or not c.big) and (not only or c.name in only)]
    if a.mcp:
        from . import mcp_run

        found, calls = mcp_run.run(cases, a.tools.split(","), a.timeout,
                                   echo=lambda line: print(line, flush=True), progress=True)
        print(f"\n{calls} MCP calls over {len(cases)} cases + escape probes: " + ", ".join(
            f"{k} {found[k]}" for k in mcp_run.KINDS))
        return 1 if sum(found.values()) else 0
    totals: Counter[str] = Counter()
    runs = 0
    for c in cases:
        res = run_case(c, a.cmd.split(","), a.timeout)
        for cmd, found in res.items():
            runs += 1
            kinds = [f for f in found if not f.startswith("rc=")]
            totals.update(kinds)
            if kinds:
                print(f"{c.name:22} {cmd:10} {','.join(kinds):18} {found[-1]}", flush=True)
    print(f"\n{runs} runs over {len(cases)} cases: " + ", ".join(
        f"{k} {totals[k]}" for k in ("internal", "memory", "hang", "silent", "good_lost",
                                      "forged", "side_effect")))
    return 1 if sum(totals.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
