"""The Python API, re-exported from `crossview`: the same functions the CLI and MCP server
call, typed, with no printing and no files written.

    import crossview
    result = crossview.analyze(["trace.json.gz"], filter=crossview.Filter(device=0))
    for f in result.findings:
        print(f.severity, f.title)
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from crossview import analysis
from crossview.analysis import Analysis
from crossview.experiments.ab import ABResult, run_ab
from crossview.experiments.diff import Diff, compare
from crossview.knowledge.thresholds import defaults
from crossview.render.ab import to_json as ab_json
from crossview.render.json import as_dict
from crossview.schema import versioned
from crossview.scope.filter import Filter
from crossview.synthesis import synthesize as synthesis
from crossview.synthesis.synthesize import Synthesis

PathLike = Path | str


def _paths(paths: PathLike | Iterable[PathLike]) -> builtins.list[Path]:
    if isinstance(paths, str | Path):
        return [Path(paths)]
    return [Path(p) for p in paths]


def analyze(paths: PathLike | Iterable[PathLike], filter: Filter | None = None,
            *, gpu: str | None = None) -> Analysis:
    """Read the captures (files, folders, archives), resolve `filter` once and build the
    views and findings: what `crossview analyze` prints. `gpu` names the GPU of ncu CSVs that
    do not. A file that cannot be read is listed in `result.rejected`, never raised; when no
    file could be read `result.views` is None."""
    return analysis.analyze(_paths(paths), filter, gpu=gpu)


def analyze_each(paths: PathLike | Iterable[PathLike], filter: Filter | None = None,
                 *, gpu: str | None = None) -> Iterator[Analysis]:
    """One Analysis per run, where `analyze` refuses inputs that are not one job (traces of
    other GPUs, clocks or workloads: `crossview analyze --each`). Each is built when the one
    before it was consumed."""
    return analysis.analyze_each(_paths(paths), filter, gpu=gpu)


def synthesize(bundle: PathLike, *, gpu: str | None = None) -> Synthesis:
    """Synthesis of an evidence bundle (what `crossview synthesize` computes; nothing is
    written). Raises `crossview.synthesis.synthesize.Refused` with fewer than two sources."""
    return synthesis.run(Path(bundle), gpu)


def diff(a: PathLike | Analysis, b: PathLike | Analysis) -> Diff:
    """What changed from capture A to capture B (per kernel family and kernel, busy, idle)."""
    sides = [s if isinstance(s, Analysis) else analyze(s) for s in (a, b)]
    return compare(*sides)


def ab(baseline: Iterable[PathLike], variant: Iterable[PathLike],
       metrics: Iterable[str] | None = None, *, noise_pct: float | None = None,
       alpha: float | None = None) -> ABResult:
    """A/B of benchmark trials (one result file per trial and arm): medians, CI, p, verdict."""
    return run_ab(_paths(baseline), _paths(variant), list(metrics) if metrics else None,
                  noise_pct, alpha)


def to_json(result: Analysis | Diff | ABResult | Synthesis) -> dict[str, Any]:
    """The JSON document the CLI's `--format json` writes for this result (with
    `schema_version`), as a dict."""
    if isinstance(result, Analysis):
        return versioned(as_dict(result))
    if isinstance(result, ABResult):
        return versioned({"baseline": result.baseline.paths, "variant": result.variant.paths,
                          **ab_json(result, defaults().ab_bootstrap_resamples)})
    if isinstance(result, Diff):
        return versioned(result.to_dict())
    return versioned(result.to_dict())
