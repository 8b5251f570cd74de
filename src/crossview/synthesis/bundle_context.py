"""Context from a bundle's own files (issue 17): the profiled command line (`*_cmd.txt`, ncu
`command.yaml`), the devices and distributed info the read artifacts record (nsys TARGET_INFO,
Kineto deviceProperties / distributedInfo, ncu device names) and benchmark-result metadata.

Every filled field records the file it came from (`Bundle.context_sources`). bundle.yaml wins:
a file only fills a field bundle.yaml leaves unknown; a file that disagrees with bundle.yaml or
with an earlier file is a warning, never silently overwritten. Tables: context_files.yaml."""

from __future__ import annotations

import fnmatch
import json
import re
import shlex
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from crossview.core.context import UNKNOWN, Context
from crossview.core.scalars import scalar_of
from crossview.errors import InputError
from crossview.knowledge import hardware
from crossview.knowledge.loader import load_yaml
from crossview.sources import outputs
from crossview.sources.nsys import schema_probe
from crossview.store.store import Store
from crossview.synthesis import bundle as bundle_mod
from crossview.synthesis import inventory as inv_mod
from crossview.synthesis.bundle import Bundle, in_outputs
from crossview.views.host import by_name
from crossview.views.workload import bench

_HF_CACHE = re.compile(r"models--([^/]+?)--([^/]+)")
_LOCAL_HOSTS = ("127.", "localhost", "::1")


@dataclass(frozen=True)
class Found:
    field: str  # a Context field, or extra.KEY
    value: Any
    source: str  # the bundle file, relative
    how: str  # where in the file

    def cite(self) -> str:
        return f"{self.source} ({self.how})"


@dataclass(frozen=True)
class Command:
    argv: list[str]  # the workload's own command (profiler wrapper removed)
    source: str
    wrapper: str  # the removed profiler prefix ("" when none)

    def text(self) -> str:
        return shlex.join(self.argv)

    def engine(self) -> str | None:
        """The serving engine the program is (context_files.yaml engines), or None."""
        return next((f.value for f in facts_of_command(self) if f.field == "engine"), None)


def _table() -> dict[str, Any]:
    return load_yaml("context_files.yaml")


def hf_repo_id(text: str) -> str:
    """A Hugging Face cache path (`…/models--org--name/snapshots/…`) → `org/name`."""
    m = _HF_CACHE.search(text)
    return f"{m.group(1)}/{m.group(2)}" if m else text


def strip_profiler(argv: list[str]) -> tuple[list[str], str]:
    """(program argv, removed wrapper text): `nsys profile -o X … python …` → `python …`."""
    profs = _table()["profilers"]
    if not argv or Path(argv[0]).name not in profs:
        return argv, ""
    spec = profs[Path(argv[0]).name]
    i = 1
    if i < len(argv) and argv[i] in spec["subcommands"]:
        i += 1
    while i < len(argv) and argv[i].startswith("-"):
        opt = argv[i]
        takes = ("=" not in opt and (re.fullmatch(r"-[A-Za-z]", opt) is not None
                                     or opt in spec["value_options"]))
        i += 2 if takes else 1
    return argv[i:], shlex.join(argv[:i])


def read_commands(b: Bundle) -> list[Command]:
    out: list[Command] = []
    globs = [spec["glob"] for spec in _table()["command_files"]]
    files = sorted(f for f in b.root.rglob("*")  # names first: a check per file is costly
                   if any(fnmatch.fnmatch(f.name, g) for g in globs) and f.is_file()
                   and not in_outputs(f, b.root) and not outputs.is_own_output(f))
    for spec in _table()["command_files"]:
        for f in files:
            if not fnmatch.fnmatch(f.name, spec["glob"]):
                continue
            try:
                text = f.read_text(encoding="utf-8")
                if spec["format"] == "line":
                    line = next((x for x in text.splitlines() if x.strip()), "")
                    argv = shlex.split(line)
                else:
                    data = yaml.safe_load(text)
                    raw = data.get(spec["key"]) if isinstance(data, dict) else None
                    argv = [str(a) for a in raw] if isinstance(raw, list) else []
            except (OSError, UnicodeDecodeError, ValueError, yaml.YAMLError) as e:
                b.warnings.append(f"{b.rel(f)}: command file not read ({e.__class__.__name__}"
                                  f": {' '.join(str(e).split())[:120]})")
                continue
            if argv:
                prog, wrapper = strip_profiler(argv)
                if prog:
                    out.append(Command(prog, b.rel(f), wrapper))
    return out


def facts_of_command(cmd: Command) -> list[Found]:
    t = _table()
    args, out = t["args"], []
    pairs: dict[str, str] = {}
    i = 0
    while i < len(cmd.argv):
        a = cmd.argv[i]
        if a.startswith("-"):
            key, eq, val = a.partition("=")
            spec = args.get(key)
            if spec and spec.get("flag"):
                pairs[key] = "true"
            elif spec and not eq and i + 1 < len(cmd.argv):
                pairs[key] = cmd.argv[i + 1]
                i += 1
            elif eq:
                pairs[key] = val
        elif "=" in a:
            key, _, val = a.partition("=")
            pairs[key] = val
        i += 1
    for key, val in pairs.items():
        spec = args.get(key)
        if spec is None:
            continue
        value: Any = hf_repo_id(val) if spec["field"] == "model" else scalar_of(val, booleans=True)
        how = f"`{key}{' ' if key.startswith('-') else '='}{val}`" + (
            f": {spec['how']}" if spec.get("how") else "")
        out.append(Found(spec["field"], value, cmd.source, how))
    for fld, spec in t["products"].items():
        vals = [pairs.get(k) for k in spec["of"]]
        if all(v is not None for v in vals):
            try:
                prod = 1.0
                for v in vals:
                    prod *= float(str(v))
            except ValueError:
                continue
            out.append(Found(fld, int(prod) if prod.is_integer() else prod, cmd.source,
                             " × ".join(f"`{k}={v}`" for k, v in zip(spec["of"], vals,
                                                                      strict=True))
                             + f": {spec['how']}"))
    for engine, names in t["engines"].items():
        if any(Path(a).name in names or a in names for a in cmd.argv[:4]):
            out.append(Found("engine", engine, cmd.source, f"the program `{cmd.argv[0]}`"))
            if engine == "vllm" and "serve" in cmd.argv[:3]:
                j = cmd.argv.index("serve") + 1
                if j < len(cmd.argv) and not cmd.argv[j].startswith("-"):
                    out.append(Found("model", hf_repo_id(cmd.argv[j]), cmd.source,
                                     "`vllm serve MODEL`"))
            break
    return out


def facts_of_store(store: Store, b: Bundle) -> list[Found]:
    """Devices, distributed info and benchmark metadata the readers stored."""
    out: list[Found] = []
    for path, name, rigor in store.sql(
            "SELECT DISTINCT d.path, d.name, a.rigor FROM gpu_devices d JOIN input_files a"
            " USING (artifact_id) WHERE d.name IS NOT NULL AND d.name <> '' ORDER BY 1, 2"
    ).fetchall():
        out.append(Found("gpu", name, b.rel(path), "the GPU name the counters record"
                         if rigor == "L3" else "device properties the trace records"))
    for path, name, host in store.sql(
            "SELECT DISTINCT a.path, k.device_name, k.host FROM profiled_launches k JOIN"
            " input_files a USING (artifact_id) WHERE k.device_name_source = 'capture'"
            " ORDER BY 1").fetchall():
        if name:
            out.append(Found("gpu", name, b.rel(path), "the device ncu profiled"))
        if host and not str(host).startswith(_LOCAL_HOSTS):
            out.append(Found("hostname", host, b.rel(path), "ncu `Host Name`"))
    for path, ws, backend in store.sql(
            "SELECT path, world_size, backend FROM input_files WHERE world_size IS NOT NULL"
            " ORDER BY 1").fetchall():
        out.append(Found("extra.world_size", ws, b.rel(path), "the trace's distributedInfo"))
        if backend:
            out.append(Found("extra.dist_backend", backend, b.rel(path),
                             "the trace's distributedInfo"))
    for spec in _table()["trace_engines"]:
        rx = f"(^|/){re.escape(spec['package'])}/"
        for path, n in by_name.matching_per_file(store, rx):
            out.append(Found("engine", spec["engine"], b.rel(path),
                             f"{n:,} Python frames in `{spec['package']}/`"))
    per: dict[str, list[dict[str, Any]]] = {}
    for path, ctx in sorted(bench.trial_contexts(store), key=lambda t: t.path):
        per.setdefault(path, []).append(ctx)
    keys = [k for k in Context.field_names() if k not in ("date", "isl_measured_mean",
                                                          "osl_measured_mean")]
    for path, ctxs in per.items():
        for k in keys:
            vals = {json.dumps(c.get(k)) for c in ctxs}
            v = ctxs[0].get(k)
            if len(vals) == 1 and v not in (None, UNKNOWN):
                out.append(Found(k, hf_repo_id(v) if k == "model" and isinstance(v, str)
                                 else v, b.rel(path), "benchmark result metadata"))
    return out


def facts_of_nsys(store: Store, b: Bundle) -> list[Found]:
    """Hostname, driver and GPU UUIDs from an nsys SQLite export's TARGET_INFO tables (the
    kernel reader keeps only what the views need; these describe the machine)."""
    out: list[Found] = []
    for (path,) in store.sql("SELECT path FROM input_files WHERE kind = 'nsys' ORDER BY 1"
                             ).fetchall():
        try:
            # read-only and immutable (no -wal/-shm written beside a WAL-mode file), tables
            # only (a view can run without end): as the reader opens it
            con = schema_probe.connect(Path(path))
            try:
                tables = set(schema_probe.table_names(con)[0])
                env = dict(con.execute(
                    "SELECT name, value FROM TARGET_INFO_SYSTEM_ENV WHERE name IN "
                    "('Hostname', 'NvDriverVersion')").fetchall()
                    if "TARGET_INFO_SYSTEM_ENV" in tables else [])
                uuids = sorted({str(u) for (u,) in con.execute(
                    "SELECT uuid FROM TARGET_INFO_GPU WHERE uuid IS NOT NULL AND uuid <> ''")}
                    if "TARGET_INFO_GPU" in tables else set())
            finally:
                con.close()
        except (sqlite3.Error, InputError):
            continue  # an older schema without these tables: nothing to add
        rel = b.rel(path)
        if env.get("Hostname"):
            out.append(Found("hostname", env["Hostname"], rel,
                             "TARGET_INFO_SYSTEM_ENV Hostname"))
        if env.get("NvDriverVersion"):
            out.append(Found("extra.driver", env["NvDriverVersion"], rel,
                             "TARGET_INFO_SYSTEM_ENV NvDriverVersion"))
        if uuids:
            out.append(Found("gpu_uuids", ",".join(uuids), rel,
                             "TARGET_INFO_GPU uuid (every GPU the session saw)"))
    return out


def _same(a: Any, b: Any) -> bool:
    return str(a).strip().lower() == str(b).strip().lower()


def apply(b: Bundle, found: list[Found]) -> None:
    """Fill unknown Context / extra fields from `found` (first wins), citing the file."""
    ctx = b.context
    for name in ctx.known():
        b.context_sources.setdefault(name, "bundle.yaml")
    for k in b.extra:
        b.context_sources.setdefault(f"extra.{k}", "bundle.yaml")
    for f in found:
        if f.field.startswith("extra."):
            key = f.field.split(".", 1)[1]
            cur: Any = b.extra.get(key)
        else:
            key = f.field
            cur = getattr(ctx, key)
        if cur is None:
            if f.field.startswith("extra."):
                b.extra[key] = str(f.value)
            else:
                setattr(ctx, key, f.value)
            b.context_sources[f.field] = f.cite()
        elif not _same(cur, f.value) and not (
                key == "gpu" and _same_gpu(str(cur), str(f.value))):
            b.warnings.append(f"context {f.field}: {f.cite()} says {f.value!r}, kept "
                              f"{cur!r} from {b.context_sources.get(f.field, 'bundle.yaml')}")


def _same_gpu(a: str, b: str) -> bool:
    sa, sb = hardware.match(a), hardware.match(b)
    return sa is not None and sb is not None and sa.hw_key == sb.hw_key


def fill_from_commands(b: Bundle) -> list[Command]:
    cmds = read_commands(b)
    b.command_files = [c.source for c in cmds]
    want = str(b.context.engine).lower() if b.context.engine else None
    engines = load_yaml("context_files.yaml")["engines"]
    if want in engines:  # bundle.yaml names a serving engine: other programs are other runs
        for c in [c for c in cmds if c.engine() != want]:
            b.warnings.append(f"{c.source}: runs `{' '.join(c.argv[:3])}`, not {want} "
                              "(bundle.yaml context.engine): its command line is not used")
            cmds.remove(c)
    apply(b, [f for c in cmds for f in facts_of_command(c)])
    if cmds and not b.capture.get("command"):
        b.command = cmds[0]
    return cmds


def take_inventory(root: Path, gpu: str | None = None) -> Any:
    """bundle.load → context from command files → inventory → context from what the readers
    stored: the order `crossview synthesize` uses, for `crossview inventory` too."""
    b = bundle_mod.load(root)
    fill_from_commands(b)
    inv = inv_mod.take(b, gpu)
    apply(b, facts_of_store(inv.store, b) + facts_of_nsys(inv.store, b))
    return inv
