"""Frame rules (frames.yaml): user vs library frames, engine detection, input pipeline."""

from __future__ import annotations

import re
from functools import cache, lru_cache

from crossview.knowledge.loader import load_yaml

_PY_FRAME = re.compile(r"^(?P<file>.+)\((?P<line>\d+)\): (?P<func>.+)$")


@cache
def _rules() -> tuple[re.Pattern[str], dict[str, re.Pattern[str]], re.Pattern[str]]:
    d = load_yaml("frames.yaml")
    lib = re.compile("|".join(f"(?:{p})" for p in d["library"]))
    engines = {k: re.compile(v) for k, v in d["engines"].items()}
    dl = re.compile("|".join(f"(?:{p})" for p in d["dataloader"]))
    return lib, engines, dl


def is_python_location(name: str) -> bool:
    """True for a frame recorded as ``file(line): function``."""
    return _PY_FRAME.match(name) is not None


@lru_cache(maxsize=1 << 16)  # once per call-tree node; B200's 15.9 k nodes hold 995 names
def is_user_frame(name: str) -> bool:
    """A python frame in the user's own code (where a fix can go)."""
    return is_python_location(name) and not _rules()[0].search(name)


def engine_of(frame_names: list[str]) -> str | None:
    """The serving engine / framework named by the python frames, if any."""
    _, engines, _ = _rules()
    for engine, pat in engines.items():
        if any(pat.search(n) for n in frame_names):
            return engine
    return None


def dataloader_pattern() -> str:
    return _rules()[2].pattern


@cache
def startup_pattern() -> str:
    """One regex (DuckDB/RE2 syntax) matching start-up frames (frames.yaml: startup)."""
    return "|".join(f"(?:{p})" for p in load_yaml("frames.yaml")["startup"])


@cache
def _torch_compile() -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{p})" for p in load_yaml("frames.yaml")["torch_compile"]))


def is_torch_compile(name: str) -> bool:
    """A start-up frame of torch.compile compiling (frames.yaml torch_compile)."""
    return _torch_compile().search(name) is not None


def patterns(key: str) -> list[str]:
    """A frames.yaml list of regexes as written (startup, gc, …): each compiles alone in
    Python too (a leading `(?i)` cannot sit inside an alternation there)."""
    return [str(p) for p in load_yaml("frames.yaml")[key]]


def runtime_of(frame_names: list[str]) -> str | None:
    """The language runtime (julia, …) the native frames belong to (frames.yaml: runtimes)."""
    for runtime, pat in load_yaml("frames.yaml")["runtimes"].items():
        rx = re.compile(pat)
        if any(rx.search(n) for n in frame_names):
            return str(runtime)
    return None


def compiled_prefixes() -> list[str]:
    """Host-op name prefixes that mean torch.compile ran the step (frames.yaml: compiled)."""
    return list(load_yaml("frames.yaml")["compiled"])


def zero_grad_ops() -> tuple[str, str]:
    """(the optimizer reset's op-name prefix, the fill op under it) (frames.yaml: zero_grad)."""
    z = load_yaml("frames.yaml")["zero_grad"]
    return str(z["call_prefix"]), str(z["fill"])


def grad_sync_ops() -> tuple[str, str]:
    """(the op autograd records per gradient accumulated, the c10d collective ops' name prefix)
    (frames.yaml: grad_sync)."""
    g = load_yaml("frames.yaml")["grad_sync"]
    return str(g["accumulate"]), str(g["collective_prefix"])


def trivial_ops() -> tuple[str, list[str]]:
    """(the dispatcher ops' name prefix, the ops whose host time is dispatch alone)
    (frames.yaml: trivial_ops)."""
    t = load_yaml("frames.yaml")["trivial_ops"]
    return str(t["prefix"]), [str(n) for n in t["names"]]


@cache
def _thread_wait() -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(p) for p in patterns("thread_wait"))


def is_thread_wait(name: str) -> bool:
    """A Python frame of a thread blocked waiting (frames.yaml: thread_wait)."""
    return any(p.search(name) for p in _thread_wait())


def optimizer_frames() -> dict[str, tuple[str, str]]:
    """Part (zero_grad, step, accumulate) → (ILIKE pre-filter, regex) (frames.yaml: optimizer)."""
    return {k: (str(v["contains"]), str(v["pattern"]))
            for k, v in load_yaml("frames.yaml")["optimizer"].items()}
