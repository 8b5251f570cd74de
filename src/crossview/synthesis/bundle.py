"""An evidence bundle: a folder of artifacts plus an optional `bundle.yaml` (the shared
convention in docs/architecture.md "Synthesis"). `findings/` is crossview's output folder and
is never read as input."""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import yaml

from crossview.core.context import UNKNOWN, Context
from crossview.errors import InputError
from crossview.sources import guard, outputs, yaml_safe
from crossview.sources.registry import discover

BUNDLE_FILE = "bundle.yaml"
OUTPUT_DIR = "findings"
TOP_KEYS = ("context", "capture", "artifacts", "source_refs")
PHASES = ("prefill", "decode", "all")


def phase_words(phase: str) -> str:
    """A phase as prose: "all" is the whole capture, not a phase called all."""
    return "the whole capture" if phase == "all" else phase


def window_words(phase: str) -> str:
    return "whole-capture kernel time" if phase == "all" else f"{phase} kernel time"
# a phase the file name says when bundle.yaml does not (nsys-stats per-stage exports)
_PHASE_IN_NAME = (("prefill", re.compile(r"prefill", re.I)),
                  ("decode", re.compile(r"decode", re.I)),
                  ("all", re.compile(r"all[-_]?stages?|\ball\b", re.I)))


@dataclass(frozen=True)
class SourceRef:
    lever: str
    repository: str
    commit: str
    file: str
    delivery: str

    def to_dict(self) -> dict[str, str]:
        return {"lever": self.lever, "repository": self.repository, "commit": self.commit,
                "file": self.file, "delivery": self.delivery}


@dataclass(frozen=True)
class ArtifactFacts:
    """What bundle.yaml says about one file (facts a file cannot say about itself)."""

    phase: str | None = None
    rank: int | None = None
    note: str | None = None
    phase_from: str = "unknown"  # bundle.yaml | file name | unknown


@dataclass
class Bundle:
    root: Path
    context: Context
    extra: dict[str, str]
    capture: dict[str, Any]
    facts: dict[str, ArtifactFacts]  # relative path → facts from bundle.yaml
    source_refs: list[SourceRef]
    files: list[Path]
    warnings: list[str] = field(default_factory=list)
    has_yaml: bool = False
    # Context field (or extra.KEY) → the file it came from (synthesis/bundle_context.py)
    context_sources: dict[str, str] = field(default_factory=dict)
    command: Any = None  # bundle_context.Command read from the bundle's command files
    command_files: list[str] = field(default_factory=list)  # the command files read

    def rel(self, path: str | Path) -> str:
        p = Path(path)
        # the name as found in the bundle first (a symlink keeps its own name, so a dangling
        # or escaping link is reported as itself), then the resolved path (resolved only
        # when needed: a resolve per file is most of a 10,000-file inventory)
        try:
            return Path(os.path.normpath(p.absolute())).relative_to(
                os.path.normpath(self.root.absolute())).as_posix()
        except ValueError:
            pass
        try:
            return p.resolve().relative_to(self.root.resolve()).as_posix()
        except ValueError:
            return str(path)

    def facts_of(self, path: str | Path) -> ArtifactFacts:
        rel = self.rel(path)
        f = self.facts.get(rel)
        if f and f.phase:
            return f
        name = Path(rel).name
        for phase, rx in _PHASE_IN_NAME:
            if rx.search(name):
                return ArtifactFacts(phase, f.rank if f else None, f.note if f else None,
                                     "file name")
        return f or ArtifactFacts()

    def context_dict(self) -> dict[str, Any]:
        d = self.context.to_dict()
        d["extra"] = dict(sorted(self.extra.items()))
        return d

    def unknowns(self) -> list[str]:
        return [k for k, v in self.context.to_dict().items() if v == UNKNOWN]


def _mapping(path: Path, data: Any, key: str) -> dict[str, Any]:
    v = data.get(key)
    if v is None:
        return {}
    if not isinstance(v, dict):
        raise InputError(path, f"`{key}:` must be a mapping, got {type(v).__name__}")
    return v


def _context(path: Path, raw: dict[str, Any], warnings: list[str]) -> tuple[Context,
                                                                             dict[str, str]]:
    names = {f.name for f in fields(Context)}
    kwargs: dict[str, Any] = {}
    extra: dict[str, str] = {}
    for k, v in raw.items():
        if k == "extra":
            if not isinstance(v, dict):
                raise InputError(path, "`context.extra:` must be a mapping")
            extra = {str(a): str(b) for a, b in v.items() if b is not None
                     and str(b) != UNKNOWN}
        elif k == "metadata":
            kwargs[k] = {str(a): str(b) for a, b in (v or {}).items()}
        elif k in names:
            if v is not None and str(v) != UNKNOWN:
                kwargs[k] = v if isinstance(v, (str, int, float, bool)) else str(v)
        else:
            warnings.append(f"{path.name}: unknown context key `{k}` (ignored; put it under "
                            "`context.extra`)")
    return Context(**kwargs), extra


def _refs(path: Path, raw: Any) -> list[SourceRef]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise InputError(path, "`source_refs:` must be a list of mappings")
    out = []
    for i, r in enumerate(raw):
        if not isinstance(r, dict) or not r.get("lever"):
            raise InputError(path, f"source_refs[{i}]: needs at least `lever:`")
        out.append(SourceRef(*(str(r.get(k) or UNKNOWN) for k in
                               ("lever", "repository", "commit", "file", "delivery"))))
    return out


def _facts(path: Path, raw: dict[str, Any], warnings: list[str]) -> dict[str, ArtifactFacts]:
    out: dict[str, ArtifactFacts] = {}
    for rel, v in raw.items():
        v = v or {}
        if not isinstance(v, dict):
            raise InputError(path, f"artifacts[{rel}]: must be a mapping (phase, rank, note)")
        phase = v.get("phase")
        if phase is not None and phase not in PHASES:
            warnings.append(f"{path.name}: artifacts[{rel}]: phase {phase!r} is not one of "
                            f"{', '.join(PHASES)} (ignored)")
            phase = None
        rank = v.get("rank")
        out[str(rel)] = ArtifactFacts(phase, int(rank) if isinstance(rank, int) else None,
                                      str(v["note"]) if v.get("note") else None,
                                      "bundle.yaml" if phase else "unknown")
    return out


def _read_yaml(yml: Path) -> str:
    """bundle.yaml's text: a regular file inside the MCP roots (guard.check_open), at most
    max_bundle_yaml_bytes (a context file, not data)."""
    guard.check_open(yml)
    cap = int(guard.limit("max_bundle_yaml_bytes"))
    if yml.stat().st_size > cap:
        raise InputError(yml, f"larger than {cap / 2**20:g} MiB (input_limits.yaml "
                         "max_bundle_yaml_bytes): bundle.yaml is a context file, not data")
    return yml.read_text(encoding="utf-8")


def _empty_file(f: Path) -> bool:
    try:
        st = f.stat()
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_size == 0


def in_outputs(f: Path, root: Path) -> bool:
    """`f`, found by walking `root` (folder links not followed), lies in the bundle's
    findings/ folder (crossview's own outputs). Only a link is resolved: a resolve per file
    was most of a 10,000-file inventory."""
    if f.is_symlink():
        return (root / OUTPUT_DIR).resolve() in f.resolve().parents
    try:
        return f.relative_to(root).parts[:1] == (OUTPUT_DIR,)
    except ValueError:
        return (root / OUTPUT_DIR).resolve() in f.resolve().parents


def load(root: Path) -> Bundle:
    """Read the bundle folder; a broken bundle.yaml is an InputError naming it."""
    if not root.exists():
        raise InputError(root, "no such folder (a bundle is a folder of artifacts)")
    if not root.is_dir():
        raise InputError(root, "not a bundle: expected a folder of artifacts")
    yml = root / BUNDLE_FILE
    data: dict[str, Any] = {}
    warnings: list[str] = []
    if yml.is_file():
        try:
            data = yaml_safe.load(_read_yaml(yml)) or {}
        except yaml_safe.YamlBudgetError as e:  # hostile, not just broken: its captures
            warnings.append(f"{yml.name} ignored: {e}")  # are still inventoried, without it
            data = {}
        except (yaml.YAMLError, UnicodeDecodeError, RecursionError) as e:
            raise InputError(yml, f"not valid YAML: {' '.join(str(e).split())}") from None
        if not isinstance(data, dict):
            raise InputError(yml, "must be a mapping (context, capture, artifacts, "
                             "source_refs)")
        warnings += [f"{yml.name}: unknown top-level key `{k}` (ignored)"
                     for k in data if k not in TOP_KEYS]
    context, extra = _context(yml, _mapping(yml, data, "context"), warnings)
    files = [f for f in discover([root])
             if not in_outputs(f, root) and f.name != BUNDLE_FILE]
    # an empty file has no suffix-independent content: discover() skips generic extensions
    # it cannot sniff, so list zero-byte files too (they are capture problems, not silence)
    empty = [f for f in root.rglob("*") if _empty_file(f) and not in_outputs(f, root)
             and f.name != BUNDLE_FILE and not outputs.is_own_output(f)]
    if empty:
        seen = {f.resolve() for f in files}
        files += sorted(f for f in empty if f.resolve() not in seen)
    return Bundle(root, context, extra, _mapping(yml, data, "capture"),
                  _facts(yml, _mapping(yml, data, "artifacts"), warnings),
                  _refs(yml, data.get("source_refs")), sorted(files), warnings,
                  yml.is_file())
