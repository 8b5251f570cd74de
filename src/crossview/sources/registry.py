"""Which reader takes which file: content sniffing first, extension as the fallback."""

from __future__ import annotations

import gzip
import importlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from crossview import progress
from crossview.errors import InputError
from crossview.sources import archive, file_budget, guard, inflate, outputs, reader_net
from crossview.sources.artifact_report import ArtifactReport
from crossview.store.store import Store

_HEAD = 65536


@dataclass(frozen=True)
class Reader:
    kind: str
    module: str  # crossview.sources.<module>: imported on first use (start-up: a Kineto
    # analyze imports the Kineto reader only, not the 15 others and what they import)
    suffixes: tuple[str, ...]
    # generic extensions (.txt, .log, …): taken from a folder, or handed to this reader,
    # only when the content sniffs as this format
    sniff_only: tuple[str, ...] = ()
    what: str = ""  # the format in words, for the "unsupported format" message

    def sniff(self, head: bytes, path: Path) -> bool:
        """Cheap content check on the first bytes (already gunzipped)."""
        return bool(self._mod().sniff(head, path))

    def read(self, path: Path, store: Store) -> ArtifactReport:
        report: ArtifactReport = self._mod().read(path, store)
        return report

    def _mod(self) -> Any:
        return importlib.import_module(f"crossview.sources.{self.module}")


# One line per input format; a new format adds one module and one line here.
READERS: tuple[Reader, ...] = (
    Reader("kineto", "kineto.reader", (".json", ".json.gz")),
    Reader("nsys", "nsys.sqlite_reader", (".sqlite",),
           what="Nsight Systems SQLite export"),
    Reader("nsys-rep", "nsys.rep", (".nsys-rep", ".qdrep"),
           what="Nsight Systems report (.nsys-rep)"),
    Reader("nsys-stats", "nsys.stats_csv", (), (".csv",), what="nsys stats CSV"),
    Reader("ncu-csv", "ncu.csv_reader", (), (".csv",),
           what="Nsight Compute CSV export (ncu --csv)"),
    Reader("ncu-rep", "ncu.rep", (".ncu-rep",), what="Nsight Compute report (.ncu-rep)"),
    Reader("vllm-bench", "bench.vllm_bench", (".json",), what="vllm bench result JSON"),
    Reader("nvml-jsonl", "counters.nvml_jsonl", (), (".jsonl",), what="NVML JSONL"),
    Reader("host-jsonl", "counters.host_jsonl", (), (".jsonl",), what="host CPU JSONL"),
    Reader("bench-generic", "bench.generic", (), (".csv", ".jsonl"),
           what="benchmark CSV/JSONL (metric,value)"),
    Reader("dcgmi-dmon", "counters.dcgmi", (), (".txt", ".log"), what="dcgmi dmon log"),
    Reader("nvidia-smi", "counters.nvidia_smi", (), (".txt", ".log", ".csv"),
           what="nvidia-smi query CSV / dmon log"),
    Reader("prometheus", "counters.prometheus", (".prom",), (".txt", ".metrics", ".log"),
           what="Prometheus /metrics scrape"),
    # sampled stacks (L1): after the JSON/text formats above, whose sniffs are stricter
    Reader("speedscope", "stacks.speedscope", (".speedscope.json",), what="speedscope JSON"),
    Reader("pprof", "stacks.pprof", (".pb.gz", ".pprof", ".pprof.gz"), (".pb", ".prof"),
           what="pprof profile (.pb.gz)"),
    Reader("folded", "stacks.folded", (".folded", ".collapsed", ".folded.gz", ".collapsed.gz"),
           (".txt", ".stacks"), what="folded stacks (a;b;c 123)"),
)


def _head(path: Path) -> bytes:
    with open(guard.check_open(path), "rb") as f:
        raw = f.read(_HEAD)
    if raw[:2] == b"\x1f\x8b":
        try:
            return inflate.decompressobj().decompress(raw, _HEAD)
        except inflate.ERRORS:
            return b""
    return raw


def _not_text(head: bytes) -> str | None:
    """Name what the bytes are when they cannot be any text format crossview reads."""
    if head[:2] in (b"\xff\xfe", b"\xfe\xff") or (len(head) > 8 and head[1:8:2] == b"\0" * 4):
        return ("UTF-16 text (crossview reads UTF-8: convert it with "
                "`iconv -f UTF-16 -t UTF-8`)")
    if not head:
        return "an empty file (0 bytes)"
    sample = head[:4096]
    try:
        sample.decode("utf-8")
    except UnicodeDecodeError as e:
        if e.start < len(sample) - 4:  # not just a character cut by the sample's end
            return f"binary data, not UTF-8 text (byte {e.start:,} is 0x{sample[e.start]:02x})"
    return None


def _sniffs(path: Path) -> bool:
    """Some reader recognizes this file's content (generic extensions found in folders)."""
    try:
        head = _head(path)
    except (OSError, InputError):
        return False
    return any(r.sniff(head, path) for r in READERS)


def pick_reader(path: Path) -> Reader:
    try:
        head = _head(path)
    except OSError as e:
        raise InputError(path, f"cannot read: {e.strerror or e}") from None
    for r in READERS:
        if r.sniff(head, path):
            return r
    name = path.name.lower()
    for r in READERS:
        if name.endswith(r.suffixes):
            return r  # let the reader say precisely what is wrong with it
    what = _not_text(head)
    if what:
        raise InputError(path, f"{what}: no crossview format matches it", "unsupported")
    raise InputError(
        path, "unsupported format: not a PyTorch-profiler trace (.json / .json.gz)"
        + "".join(", " + r.what for r in READERS if r.what), "unsupported"
    )


def _own_output(f: Path) -> bool:
    """crossview's own outputs in a bundle (`findings/synthesis-*.json|md`, written by
    `crossview synthesize`) are not captures: a folder walk skips them."""
    return f.parent.name == "findings" and f.name.startswith("synthesis-")


def discover(paths: Iterable[Path]) -> list[Path]:
    """Expand folders (recursively) to the files crossview can try; keep files as given."""
    return discover_all(paths)[0]


def discover_all(paths: Iterable[Path], budget: int | None = None
                 ) -> tuple[list[Path], list[Path], list[Path]]:
    """(files to read, files skipped, files past the budget) — folders expanded without
    following folder links; a FIFO or device named like a capture is kept, so its reader
    refuses it by name; files with a generic extension (.csv, .txt, …) whose content no reader
    recognizes are skipped and returned, so the caller can say so. `budget`: at most this many
    files are looked at (sniffed or read), the shallowest first (sources/file_budget.py)."""
    found: list[tuple[Path, bool]] = []  # (file, kept only if its content sniffs)
    suffixes = tuple(s for r in READERS for s in r.suffixes) + archive.SUFFIXES
    maybe = tuple(s for r in READERS for s in r.sniff_only)
    for p in paths:
        if not p.is_dir():
            found.append((p, False))  # files as given, in the given order
            continue
        here: list[tuple[Path, bool]] = []
        for f in guard.walk(p):
            name = f.name.lower()
            if _own_output(f) or outputs.is_own_output(f):
                continue
            if name.endswith(suffixes) or not guard.inside_roots(f) or (
                    f.is_dir() and not f.is_symlink()):  # a folder walk could not list
                # outside the MCP roots (a link out): kept so its open refuses it with that
                # reason — never sniffed, so nothing of its bytes decides how it is reported
                here.append((f, False))
            elif name.endswith(maybe):
                here.append((f, True))
        found.extend(sorted(here))
    over: list[tuple[Path, bool]] = []
    if budget is not None:
        found, over = file_budget.cap(found, budget, key=lambda e: e[0])
    out: list[Path] = []
    skipped: list[Path] = []
    for f, sniff in found:
        (out if not sniff or _sniffs(f) else skipped).append(f)
    return out, skipped, [f for f, _ in over]


def read_all(paths: Iterable[Path], store: Store) -> list[ArtifactReport]:
    """Read every input; a bad one is reported and skipped, the rest still read."""
    # .tar/.tar.gz/.zip bundles are read as the folder they extract to (sources/archive.py)
    paths, bad = archive.expand(paths)
    reports = [ArtifactReport(e.path, "archive", e.status, [e.problem]) for e in bad]
    files, skipped, over = discover_all(paths, file_budget.files_per_run())
    if over:
        reports.append(file_budget.refused(over))
    # archives found by walking a folder: expanded once (an archive inside an archive is not)
    nested = [f for f in files if archive.is_archive(f)]
    if nested:
        files = [f for f in files if f not in nested]
        inner, bad = archive.expand(nested)
        reports += [ArtifactReport(e.path, "archive", e.status, [e.problem]) for e in bad]
        more, more_skipped, _ = discover_all(inner)  # members: ≤ max_archive_members
        skipped += more_skipped
        for f in more:
            if archive.is_archive(f):
                reports.append(ArtifactReport(guard.show(f), "archive", "skipped", [
                    "an archive inside an archive: not expanded (extract it first)"]))
            else:
                files.append(f)
    reports += [ArtifactReport(guard.show(f), "unknown", "skipped", [
        "content not recognized by any reader (not a capture format crossview reads)"])
        for f in skipped]
    sizes = [_size(f) for f in files]
    bar = progress.current()  # silent unless the CLI installed a bar (crossview.progress)
    bar.begin(len(files), sum(sizes))
    try:
        for path, size in zip(files, sizes, strict=True):
            bar.file(str(path), size)
            reports.append(_read_one(path, store))
            bar.file_done()
    finally:
        bar.end()
    for r in reports:  # a non-UTF-8 file name: the same escaped text as the store holds
        r.path = r.path.encode("utf-8", "backslashreplace").decode("utf-8")
    return reports


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _read_one(path: Path, store: Store) -> ArtifactReport:
    if not path.exists() and not path.is_symlink():
        return ArtifactReport(guard.show(path), "unknown", "invalid", ["no such file"])
    reader: Reader | None = None
    try:
        guard.check_open(path)
        reader = pick_reader(path)
        return reader.read(path, store)
    except InputError as e:
        kind = reader.kind if reader is not None else "unknown"
        return ArtifactReport(guard.show(e.path), kind, e.status, [e.problem])
    except (gzip.BadGzipFile, EOFError) as e:
        return ArtifactReport(guard.show(path), "unknown", "invalid", [str(e)])
    except reader_net.CAUGHT as e:  # what a reader let through: one line, the rest still read
        if type(e).__name__ == "OutOfMemoryException":
            raise  # the memory limit, not this file: the CLI says so in one line
        kind = reader.kind if reader is not None else "unknown"
        return ArtifactReport(guard.show(path), kind, "invalid", [reader_net.problem(e)])
