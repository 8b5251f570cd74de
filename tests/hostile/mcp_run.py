"""The hostile corpus through the MCP tools of one real stdio server (issue 18).

    PYTHONPATH=src .venv/bin/python -m tests.hostile.run --mcp [--big] [--only NAME,...]
                                                         [--tools analyze,inventory,...]

One `crossview mcp` server (under the runner's address-space cap and CROSSVIEW_MEMORY_LIMIT)
serves a root holding one folder per case: its bad input beside the good MI300X capture.
Each tool is called on it; a planted folder of ways out of the root (a symlink to an outside
trace in a walked folder, a bundle.yaml naming it, model configs outside, an absolute and a
`..` path) is probed once. The outside files hold a marker that must never come back.
Twelve calls sent at once (twelve stores) and `whatif`/`diff` with a missing path beside
the good capture are probed once too (issue 43).
Outcomes counted, as the CLI runner plus:
  internal  the SDK's bare "Error executing tool X" (an unexpected exception) or a traceback
  memory    out of memory, or the server died (it is restarted for the next case)
  hang      no answer within the timeout (the server is restarted)
  escape    the outside marker in any answer, or an outside file read without a refusal
  long      an error longer than mcp_max_error_chars (+ its length note), or an answer
            over ANSWER_CAP bytes (detail=summary answers are meant to stay small)
  silent / good_lost  judged on analyze and inventory as the CLI runner judges them
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from crossview.sources import guard

from .corpus import GOOD_KINETO, Case
from .mcp_wire import Wire
from .run import AS_CAP, judge

TOOLS = ("analyze", "inventory", "kernels", "query", "hot_traces")
SECRET = "outside-marker-never-echoed-7f3a"
ANSWER_CAP = 1 << 20  # bytes: detail=summary answers are meant to stay small
# an error: input_limits.yaml mcp_max_error_chars + its "… (N characters)" note
ERROR_CAP = int(guard.limit("mcp_max_error_chars")) + 40
CMD = {"query": "analyze", "hot_traces": "analyze"}  # the CLI command a tool stands for


def _args(tool: str, d: Path, pair: list[str]) -> dict:
    return {"analyze": {"paths": pair}, "inventory": {"bundle": str(d)},
            "kernels": {"paths": pair},
            "query": {"paths": pair, "sql": "SELECT count(*) AS n FROM gpu_ops"},
            "hot_traces": {"paths": pair, "view": "cpu"}}[tool]


def _outside(base: Path) -> Path:
    out = base / "outside"
    out.mkdir()
    (out / "secret.pt.trace.json").write_text(json.dumps({"traceEvents": [
        {"ph": "X", "cat": "kernel", "name": SECRET, "ts": 1, "dur": 1, "pid": 0, "tid": 7,
         "args": {"device": 0, "stream": 7}}]}))
    (out / "llama.json").write_text(json.dumps({"hidden_size": SECRET}))
    return out


def _escape_probes(root: Path, out: Path) -> list[tuple[str, dict]]:
    leak = root / "leak"
    leak.mkdir()
    (leak / "linked.pt.trace.json").symlink_to(out / "secret.pt.trace.json")
    (leak / "config.json").symlink_to(out / "llama.json")
    shutil.copyfile(GOOD_KINETO, leak / GOOD_KINETO.name)
    named = root / "named"
    named.mkdir()
    (named / "bundle.yaml").write_text(
        "artifacts:\n  ../../outside/secret.pt.trace.json:\n    phase: decode\n")
    secret = str(out / "secret.pt.trace.json")
    return [("analyze", {"paths": [str(leak)]}), ("inventory", {"bundle": str(leak)}),
            ("inventory", {"bundle": str(named)}), ("analyze", {"paths": [str(named)]}),
            ("analyze", {"paths": [secret]}),
            ("analyze", {"paths": [str(root / ".." / "outside" / "secret.pt.trace.json")]}),
            ("query", {"paths": [str(leak)], "sql": "SELECT name FROM gpu_ops"}),
            ("sol_bounds", {"model": str(leak / "config.json"), "hardware": "H100"}),
            ("sol_bounds", {"model": str(out / "llama.json"), "hardware": "H100"}),
            ("sol_bounds", {"model": "../outside/llama", "hardware": "H100"})]


class Runner:
    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self.base = Path(tempfile.mkdtemp(prefix="hostile-mcp-"))
        self.out = _outside(self.base)
        self.root = self.base / "root"
        self.root.mkdir()
        self.log = (self.base / "server-stderr.txt").open("ab")
        self.wire = self._start()

    def _start(self) -> Wire:
        try:
            return Wire([self.root], stderr=self.log, as_cap=AS_CAP,
                        env={"CROSSVIEW_MEMORY_LIMIT": "500MB"})
        except RuntimeError:  # once more: a slow start on a loaded machine
            return Wire([self.root], stderr=self.log, as_cap=AS_CAP,
                        env={"CROSSVIEW_MEMORY_LIMIT": "500MB"})

    def close(self) -> None:
        self.wire.close()
        self.log.close()
        shutil.rmtree(self.base, ignore_errors=True)

    def call(self, tool: str, args: dict) -> tuple[list[str], bool, str]:
        """(problems, is_error, text) of one call; restarts a hung or dead server."""
        size, err, text = self.wire.tool(tool, args, self.timeout)
        if err is None:
            died = not self.wire.alive()
            self.wire.p.kill()
            self.wire.p.wait()
            self.wire = self._start()
            return (["memory"] if died else ["hang"]), True, ""
        found = []
        if SECRET in text:
            found.append("escape")
        if err and (text.strip() == f"Error executing tool {tool}" or "Traceback" in text
                    or "internal error" in text):
            found.append("internal")
        if err and ("out of memory" in text or "MemoryError" in text):
            found.append("memory")
        if (err and len(text) > ERROR_CAP) or size > ANSWER_CAP:
            found.append("long")
        return found, err, text

    def probe_escapes(self) -> tuple[dict[str, list[str]], int]:
        """(problems per probe, probes made)."""
        res: dict[str, list[str]] = {}
        probes = _escape_probes(self.root, self.out)
        for i, (tool, args) in enumerate(probes):
            found, err, text = self.call(tool, args)
            if not err and tool == "sol_bounds":
                found.append("escape")  # an outside config was read
            if found:
                res[f"{tool}#{i}"] = found + [text[:160]]
        return res, len(probes)

    def probe_pressure(self) -> tuple[dict[str, list[str]], int]:
        """Twelve calls sent at once on twelve stores (issue 43): each answered, without an
        error, by a server still alive; then per-path answers from `whatif` and `diff` with
        a missing path beside the good capture (the good capture is still used)."""
        press = self.root / "press"
        for i in range(12):
            (press / f"c{i}").mkdir(parents=True)
            shutil.copyfile(GOOD_KINETO, press / f"c{i}" / GOOD_KINETO.name)
        try:
            calls = [("analyze" if i % 2 else "hot_traces", {"paths": [str(press / f"c{i}")]})
                     for i in range(12)]
            res: dict[str, list[str]] = {}
            for i, (err, text) in enumerate(self.wire.tools_at_once(calls, self.timeout * 4)):
                if err is None:
                    res[f"at-once#{i}"] = ["memory" if not self.wire.alive() else "hang", ""]
                elif err:
                    res[f"at-once#{i}"] = ["memory" if "thread" in text or "memory" in text
                                           else "internal", text[:160]]
            if not self.wire.alive():
                self.wire = self._start()
            good, gone = str(press / "c0" / GOOD_KINETO.name), str(press / "gone.json")
            for tool, args in (("whatif", {"capture": [good, gone]}),
                               ("diff", {"a": [good, gone], "b": good})):
                found, err, text = self.call(tool, args)
                if not found and (err or gone not in text):
                    found = ["good_lost"]  # one bad path refused the call, or went unsaid
                if found:
                    res[f"per-path {tool}"] = found + [text[:160]]
            return res, len(calls) + 2
        finally:
            _rm(press)

    def run_case(self, case: Case, tools: list[str]) -> tuple[dict[str, list[str]], int]:
        """(problems per tool, calls made) of one case."""
        d = self.root / case.name
        d.mkdir()
        try:
            try:
                bad = case.make(d)
            except FileNotFoundError:
                return {}, 0
            good = d / GOOD_KINETO.name
            shutil.copyfile(GOOD_KINETO, good)
            pair = [str(d)] if bad.is_dir() or bad.name == "bundle.yaml" else [str(bad),
                                                                                str(good)]
            try:
                str(bad).encode("utf-8")
            except UnicodeEncodeError:  # a non-UTF-8 name cannot be sent in JSON: walk its
                pair = [str(d)]  # folder (the server refuses the raw name in one sentence)
            res: dict[str, list[str]] = {}
            calls = 0
            for tool in tools:
                if case.cmds and CMD.get(tool, tool) not in case.cmds:
                    continue
                calls += 1
                found, err, text = self.call(tool, _args(tool, d, pair))
                if tool in ("analyze", "inventory") and not found:
                    rc, out = (2, "") if err else (0, text)
                    found = judge(case, tool, bad, good, rc, out,
                                  "crossview: error: " + text.replace("\n", " ") if err
                                  else "")
                if found:
                    res[tool] = found + [text[:160].replace("\n", " ")]
            return res, calls
        finally:
            _rm(d)


def _rm(d: Path) -> None:
    try:
        shutil.rmtree(d)
    except OSError:  # an unreadable folder of a case: make it removable first
        subprocess.run(["chmod", "-R", "u+rwx", str(d)], check=False)
        shutil.rmtree(d, ignore_errors=True)


KINDS = ("internal", "memory", "hang", "silent", "good_lost", "escape", "long")


def _count(totals: Counter[str], label: str, res: dict[str, list[str]],
           echo: Callable[[str], None] | None) -> None:
    for tool, what in res.items():
        kinds = [k for k in what if k in KINDS]
        totals.update(kinds)
        if echo and kinds:
            echo(f"{label:22} {tool:12} {','.join(kinds):16} {what[-1]}")


def run(cases: list[Case], tools: list[str], timeout: float = 60,
        echo: Callable[[str], None] | None = None, progress: bool = False
        ) -> tuple[Counter[str], int]:
    """(count per outcome kind, calls made) over the escape probes and the cases."""
    r = Runner(timeout)
    totals: Counter[str] = Counter()
    try:
        res, calls = r.probe_escapes()
        _count(totals, "(escape probe)", res, echo)
        res, n = r.probe_pressure()
        _count(totals, "(pressure probe)", res, echo)
        calls += n
        for c in cases:
            if progress:
                print(f"… {c.name}", file=sys.stderr, flush=True)
            res, n = r.run_case(c, tools)
            _count(totals, c.name, res, echo)
            calls += n
    finally:
        r.close()
    return totals, calls
