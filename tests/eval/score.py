"""Score crossview's verdicts against the evaluation set (tests/eval/cases.yaml, issue 37).

Independent of crossview's ranking code: each capture is analyzed and rendered as the JSON
any consumer reads (`crossview analyze --format json`), and only that JSON is judged here —
which pattern leads the 🔴, which must not be 🔴, which phrases no fix may print, the shares
of red+yellow findings per basis, that a replayed lever's number is carried and ranks its
finding, that "your code" never names a library or cache frame.

    python tests/eval/score.py [--data ../shared/data] [--only NAME]

prints one line per case and check and the score (passed / checked); exit 1 when any check
fails. tests/test_eval.py runs it in CI; bench/eval_score.py prints it beside the benchmarks.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
CASES = HERE / "cases.yaml"
# a frame "your code" may never name: library, engine, standard-library and cache code
_NOT_YOURS = re.compile(r"(^|/)(torch|vllm|sglang|transformers|aiter|triton|flashinfer|"
                        r"numpy|site-packages)/|torch_compile_cache|inductor_cache|\.cache/")


@dataclass
class Result:
    name: str
    synthetic: bool
    checks: list[tuple[str, bool, str]] = field(default_factory=list)
    skipped: str = ""

    def check(self, what: str, ok: bool, detail: str = "") -> None:
        self.checks.append((what, ok, detail))

    @property
    def passed(self) -> int:
        return sum(1 for _, ok, _ in self.checks if ok)


def cases() -> list[dict[str, Any]]:
    data: dict[str, Any] = yaml.safe_load(CASES.read_text(encoding="utf-8"))
    return list(data["cases"])


def _name(case: dict[str, Any]) -> str:
    return str(case.get("capture") or f"synthetic/{case['synthetic']}")


def analyze_json(path: Path) -> dict[str, Any]:
    """crossview's JSON output for one capture (what a consumer of `--format json` reads)."""
    from crossview.analysis import analyze
    from crossview.render import json as json_out

    return json.loads(json_out.render(analyze([path])))


def judge(case: dict[str, Any], out: dict[str, Any], r: Result) -> None:
    found = out.get("findings") or []
    reds = [f for f in found if f["severity"] == "red"]
    yellows = [f for f in found if f["severity"] == "yellow"]
    want = case.get("first_red", "none")
    got = reds[0]["pattern"] if reds else "none"
    r.check(f"first 🔴 is {want}", got == want, f"got {got}")
    for p in case.get("not_red") or []:
        r.check(f"{p} is not 🔴", not any(f["pattern"] == p for f in reds))
    text = " ".join(f"{f['title']} {f['fix']} {f['expected_effect']}" for f in found
                    if f["severity"] in ("red", "yellow"))
    notes = " ".join(f"{f['title']} {f['observation']} {f['fix']} {f['expected_effect']}"
                     for f in found)
    for phrase in case.get("forbid") or []:
        r.check(f"no {phrase!r}", phrase.lower() not in (text + " " + " ".join(
            f["fix"] for f in found)).lower())
    for phrase in case.get("need") or []:
        r.check(f"says {phrase!r}", phrase.lower() in notes.lower())
    if case.get("red_effect"):
        r.check("first 🔴 carries its replayed effect",
                bool(reds) and case["red_effect"] in reds[0]["expected_effect"])
    for basis in ("time", "kernel_time"):
        total = sum(f["share"] for f in reds + yellows if f.get("share_of", "time") == basis)
        r.check(f"red+yellow shares of {basis} ≤ 100%", total <= 1.0 + 1e-9, f"{total:.3f}")
    for f in reds + yellows:
        rep = (f.get("details") or {}).get("replay")
        if not isinstance(rep, dict):
            continue
        r.check(f"{f['pattern']} carries its replay",
                re.search(r"crossview whatif [^`]*--lever", f["expected_effect"]) is not None)
        saving = (f.get("details") or {}).get("saving") or {}
        if rep.get("predicts_fix"):
            meas, pred = rep["measured_step_ns"], rep["predicted_step_ns"]
            want_saving = max(meas - pred, 0) / meas if meas else 0.0
            r.check(f"{f['pattern']} ranked by its replay",
                    saving.get("from") == "replay"
                    and abs(float(saving.get("share_of_step", -1)) - want_saving) < 1e-9)
    for sev in (reds, yellows):  # within a severity, the larger predicted saving first
        s = [float(((f.get("details") or {}).get("saving") or {}).get("share_of_step", 0))
             for f in sev]
        r.check("ranked by predicted saving", s == sorted(s, reverse=True), str(s))
    for frame in re.findall(r"your code at `([^`]+)`", notes):
        r.check(f"`{frame}` is the user's code", not _NOT_YOURS.search(frame))


def run(data: Path, only: str | None = None, exact: bool = False) -> list[Result]:
    """Score every case (or those whose name holds `only`; the one named `only` if
    `exact`)."""
    sys.path.insert(0, str(HERE))
    import synthetic  # noqa: PLC0415 (tests/eval on sys.path only here)

    out: list[Result] = []
    with tempfile.TemporaryDirectory(prefix="crossview-eval-") as tmp:
        for case in cases():
            name = _name(case)
            if only and (only != name if exact else only not in name):
                continue
            r = Result(name, "synthetic" in case)
            if r.synthetic:
                path = synthetic.build(str(case["synthetic"]), Path(tmp), data)
            else:
                path = data / str(case["capture"])
            if path is None or not path.exists():
                r.skipped = f"{path or name} absent"
                out.append(r)
                continue
            judge(case, analyze_json(path), r)
            out.append(r)
    return out


def report(results: list[Result]) -> str:
    lines = []
    checked = passed = 0
    for r in results:
        if r.skipped:
            lines.append(f"SKIP  {r.name}: {r.skipped}")
            continue
        checked += len(r.checks)
        passed += r.passed
        tag = "ok  " if r.passed == len(r.checks) else "FAIL"
        lines.append(f"{tag}  {r.name}{' (synthetic)' if r.synthetic else ''}: "
                     f"{r.passed}/{len(r.checks)}")
        for what, ok, detail in r.checks:
            if not ok:
                lines.append(f"        ✗ {what}" + (f" ({detail})" if detail else ""))
    lines.append(f"score {passed}/{checked}" + (f" = {100 * passed / checked:.1f}%"
                                                if checked else ""))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--only")
    a = ap.parse_args(argv)
    results = run(a.data, a.only)
    print(report(results))
    return 0 if all(r.passed == len(r.checks) for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
