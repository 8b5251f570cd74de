"""What every ncu export (details CSV, raw CSV, .ncu-rep) is parsed into before the store.

One `KernelRecord` per profiled kernel launch; the three readers differ only in how they
fill it. `ingest.write` turns a list of them into rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from crossview.sources.ncu.units import normalize, parse_number


@dataclass
class MetricRow:
    section: str
    metric: str
    value: float | None  # SI base units (units.normalize); None: n/a or text
    unit: str
    raw_value: str
    raw_unit: str


@dataclass
class RuleRow:
    section: str
    rule: str
    type: str  # OPT | WRN | INF | ERR (as ncu's CSV writes it)
    title: str
    message: str
    speedup_type: str
    speedup_pct: float | None


@dataclass
class KernelRecord:
    ncu_id: str
    name: str
    launch_key: str  # one launch across exports (see sol/roofline.py merge)
    process: str | None = None
    pid: str | None = None
    host: str | None = None
    device: int | None = None
    device_name: str | None = None
    cc: str | None = None
    sm_count: int | None = None
    mem_bytes: int | None = None
    context: str | None = None
    stream: int | None = None
    grid: str | None = None
    block: str | None = None
    metrics: list[MetricRow] = field(default_factory=list)
    rules: list[RuleRow] = field(default_factory=list)

    def add_text_metric(self, section: str, metric: str, raw_value: str, raw_unit: str
                        ) -> None:
        """A value as ncu printed it: localized number, auto-scaled unit."""
        value, unit = normalize(parse_number(raw_value), raw_unit)
        self.metrics.append(MetricRow(section, metric, value, unit, raw_value, raw_unit))


def as_int(text: str | None) -> int | None:
    v = parse_number(text)
    return int(v) if v is not None and v == int(v) else None


def launch_key(host: str | None, pid: str | None, ncu_id: str, context: str | None,
               stream: str | None, grid: str | None, block: str | None, name: str) -> str:
    """Exports of one ncu session repeat these per launch; different launches differ."""
    return "|".join(x or "" for x in (host, pid, ncu_id, context, stream, grid, block, name))
