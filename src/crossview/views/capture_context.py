"""The capture context: what kind of program a capture shows, as one typed record (issue 37).

Frameworks seen (PyTorch, JAX, Julia/CUDA.jl, Triton; none → plain CUDA or unknown), training
vs inference, the serving engine (vLLM, SGLang, TensorRT-LLM, Hugging Face transformers), the
model kind where modules or recorded attention arguments show it (causal decoder, encoder/ViT,
conv net, MoE), the GPU generation and the tensor-core dtypes it states, torch.compile and CUDA
graphs in use, and where a change goes (the user's own frame, or why none can be named). Each
fact carries its evidence; a fact the capture does not show is None / empty, never guessed.
Markers: knowledge/capture_context.yaml. The verdict prints a fix variant only where the
variant's requirements (fixes.yaml `requires`) are known and met here.
"""

from __future__ import annotations

from functools import cache
from typing import NamedTuple

from msgspec import Struct

from crossview import opmodels
from crossview.knowledge import frames, hardware
from crossview.knowledge.loader import load_typed
from crossview.knowledge.schemas import CaptureContextRules
from crossview.store.host_calls import NO_LIMIT
from crossview.store.store import Store


class Fact(Struct, frozen=True):
    """One context fact and the evidence it stands on (recorded names, as read)."""

    value: str
    evidence: str


class CaptureContext(Struct, frozen=True, kw_only=True):
    frameworks: tuple[Fact, ...] = ()  # pytorch | jax | julia | triton
    phase: Fact | None = None  # training | inference
    engine: Fact | None = None  # vllm | sglang | trtllm | transformers
    models: tuple[Fact, ...] = ()  # causal-decoder | encoder | conv-net | moe
    vendor: str | None = None  # nvidia | amd (one vendor covers every GPU in scope)
    generation: str | None = None  # volta | turing | ampere | ada | hopper | blackwell | cdna3…
    dtypes: tuple[str, ...] = ()  # tensor-core dtypes the GPU states (fp16, bf16, tf32, fp8…)
    sources: tuple[str, ...] = ()  # artifact kinds in scope (kineto, nsys, ncu, …)
    compiled: bool = False  # torch.compile ran (part of) the step
    kernels: bool = False  # the capture holds GPU kernels (a timeline or ncu rows)
    # own: a frame of the user's own code is on the hot path (frames.yaml: not library,
    # engine, cache or generated code); library: python frames recorded, none of them the
    # user's; None: no python stacks, so the capture cannot say
    code: str | None = None

    def has(self, key: str, value: str) -> bool | None:
        """Whether the capture shows `value` for `key`: True / False, or None when the
        capture does not say (an unknown requirement is unmet: fixes.yaml `requires`)."""
        if key == "framework":
            return True if value in self.framework_names else (
                False if self.framework_names else None)
        if key == "model":
            return True if value in self.model_names else (False if self.model_names else None)
        if key == "engine":
            return None if self.engine is None else self.engine.value == value
        if key == "phase":
            return None if self.phase is None else self.phase.value == value
        if key == "vendor":
            return None if self.vendor is None else self.vendor == value
        if key == "dtype":
            return None if not self.dtypes else value in self.dtypes
        if key == "source":
            return value in self.sources
        if key == "code":
            return None if self.code is None else self.code == value
        raise KeyError(key)

    @property
    def framework_names(self) -> tuple[str, ...]:
        return tuple(f.value for f in self.frameworks)

    @property
    def model_names(self) -> tuple[str, ...]:
        return tuple(f.value for f in self.models)


@cache
def rules() -> CaptureContextRules:
    rules_: CaptureContextRules = load_typed("capture_context.yaml")
    return rules_


def _any(pats: list[str]) -> str:
    return "|".join(f"(?:{p})" for p in pats)


class _FirstNames:
    """The first distinct name (shortest, then alphabetical) that each pattern (RE2) matches
    in one name list: every pattern the context's rules ask of that list in one query (one
    statement per list, not one per pattern: 19 → 4 on a Kineto capture)."""

    def __init__(self, store: Store, sql: str, pats: list[str]) -> None:
        self._pats = [p for p in dict.fromkeys(pats) if p]
        self._store, self._sql = store, sql
        self._hit: dict[str, str | None] | None = None

    def __call__(self, pat: str) -> str | None:
        if not pat:
            return None
        if self._hit is None:
            self._hit = self._query()
        name = self._hit[pat]
        if name is None:
            return None
        return name if len(name) <= _SHOWN else name[:_SHOWN - 1] + "…"

    def _query(self) -> dict[str, str | None]:
        if not self._pats:
            return {}
        firsts = ", ".join(f"first(n ORDER BY length(n), n) FILTER (regexp_matches(n, $p{i}))"
                           for i in range(len(self._pats)))
        row = self._store.sql(f"SELECT {firsts} FROM ({self._sql} LIMIT {NO_LIMIT})",
                              {f"p{i}": p for i, p in enumerate(self._pats)}).fetchall()[0]
        return {p: None if n is None else str(n) for p, n in zip(self._pats, row, strict=True)}


_SHOWN = 80  # characters of a recorded name quoted as evidence


_HOST = "SELECT DISTINCT name AS n FROM f_host WHERE kind IN ('op', 'annotation', 'runtime')"
_PY = "SELECT DISTINCT name AS n FROM f_host WHERE kind = 'python'"
_KERNELS = ("SELECT DISTINCT name AS n FROM f_gpu WHERE kind = 'kernel' UNION "
            "SELECT DISTINCT name AS n FROM profiled_kernels")
_MODULES = ("SELECT DISTINCT regexp_replace(substr(name, 12), '_\\d+$', '') AS n FROM f_host"
            " WHERE starts_with(name, 'nn.Module: ')")
_SAMPLED = "SELECT DISTINCT f.name AS n FROM frames f JOIN f_samples s ON s.node_id = f.node_id"


class _Names(NamedTuple):
    """The name lists the context's markers are matched in, each asked once."""

    host: _FirstNames
    py: _FirstNames
    kernels: _FirstNames
    modules: _FirstNames


def _names(store: Store) -> _Names:
    r = rules()
    fws, mds = list(r.frameworks.values()), list(r.models.values())
    return _Names(
        host=_FirstNames(store, _HOST, [_any(m.host) for m in fws]),
        py=_FirstNames(store, _PY, [_any(m.python) for m in fws] + list(r.engines.values())
                       + [_any(m.python) for m in mds]),
        kernels=_FirstNames(store, _KERNELS, [_any(m.kernels) for m in fws]
                            + [_any(m.kernels) for m in mds]),
        modules=_FirstNames(store, _MODULES, [_any(m.modules) for m in mds]))


def _frameworks(names: _Names, sources: tuple[str, ...], runtime: str | None
                ) -> tuple[Fact, ...]:
    out: list[Fact] = []
    for name, m in rules().frameworks.items():
        hit = (next((f"{s} trace" for s in m.sources if s in sources), None)
               or names.host(_any(m.host)) or names.py(_any(m.python))
               or names.kernels(_any(m.kernels)))
        if hit is None and name == runtime:
            hit = f"sampled {runtime} runtime frames"
        if hit is not None:
            out.append(Fact(name, hit))
    return tuple(out)


def _engine(names: _Names, metrics_engine: str | None) -> Fact | None:
    for name, pat in rules().engines.items():
        hit = names.py(pat)
        if hit is not None:
            return Fact(name, hit)
    if metrics_engine:
        return Fact(metrics_engine, f"{metrics_engine} metrics")
    return None


def _causal(store: Store) -> bool | None:
    """The attention ops' recorded is_causal: True when any is causal, False when all say
    not, None when none is recorded."""
    rows = store.sql(
        "SELECT DISTINCT h.name, a.input_dims, a.input_types, a.concrete_inputs FROM op_args a"
        " JOIN host_ops h ON h.op_id = a.op_id AND NOT a.on_gpu"
        " WHERE h.name IN (SELECT unnest($n))", {"n": rules().attention_ops}).fetchall()
    said = set()
    for name, dims, types, conc in rows:
        c = opmodels.cost(str(name), dims, types, conc)
        if c is None or "causal=?" in c.shape:
            continue
        said.add(c.shape.endswith(" causal"))
    return True if True in said else (False if said else None)


def _conv_share(store: Store) -> float:
    row = store.sql(
        "SELECT coalesce(sum(g.dur_ns) FILTER (regexp_matches(p.name, $o)), 0),"
        " coalesce(sum(g.dur_ns), 0) FROM f_gpu g JOIN host_ops r ON r.op_id = g.launch_op_id"
        " LEFT JOIN host_ops p ON p.op_id = r.parent WHERE g.kind = 'kernel'",
        {"o": _any(rules().conv_ops)}).fetchall()[0]
    return float(row[0]) / float(row[1]) if row[1] else 0.0


def _models(store: Store, names: _Names, engine: Fact | None) -> tuple[Fact, ...]:
    out: list[Fact] = []
    causal = _causal(store)
    for name, m in rules().models.items():
        hit = (names.modules(_any(m.modules)) or names.py(_any(m.python))
               or names.kernels(_any(m.kernels)))
        ev = f"`{hit}`" if hit else None
        if name == "causal-decoder":
            if causal is True:
                ev = "attention ops recorded with is_causal=True"
            elif causal is False and ev is None:
                ev = None
            if ev is None and engine is not None and engine.value in rules().generative_engines:
                ev = f"served by {engine.value}"
        if name == "encoder" and ev is None and causal is False and not any(
                f.value == "causal-decoder" for f in out):
            ev = "attention ops recorded with is_causal=False"
        if name == "conv-net" and ev is None:
            share = _conv_share(store)
            if share >= rules().conv_op_share:
                ev = f"convolution ops hold {share:.0%} of the kernel time"
        if ev is not None:
            out.append(Fact(name, ev))
    return tuple(out)


def _phase(store: Store, engine: Fact | None, training_markers: list[str]) -> Fact | None:
    hit = store.sql(
        f"SELECT n FROM (SELECT DISTINCT name AS n FROM f_host LIMIT {NO_LIMIT})"
        " WHERE list_has_any([m FOR m IN $m IF contains(n, m)], $m) ORDER BY n LIMIT 1",
        {"m": training_markers}).fetchall()
    if hit:
        return Fact("training", f"backward ops (`{hit[0][0]}`)")
    if engine is not None and engine.value in rules().generative_engines:
        return Fact("inference", f"served by {engine.value}")
    forward = store.sql("SELECT count(*) FROM f_host WHERE kind = 'op'").fetchall()[0][0]
    if forward:
        return Fact("inference", "operators recorded, no backward op")
    return None


def _gpu(store: Store) -> tuple[str | None, str | None, tuple[str, ...]]:
    """(vendor, generation, tensor-core dtypes) when one GPU kind covers every device."""
    r = rules()
    specs, ccs = set(), set()
    for name, sms, mem, ma, mi in store.sql(
            "SELECT DISTINCT name, sm_count, mem_bytes, cc_major, cc_minor FROM devices"
            " WHERE name IS NOT NULL AND name <> ''").fetchall():
        cc = f"{ma}.{mi}" if ma is not None else None
        s = hardware.match(name, sm_count=sms, mem_bytes=mem, cc=cc)
        if s is not None:
            specs.add(s.hw_key)
        if cc:
            ccs.add(cc)
    spec = hardware.by_key(next(iter(specs))) if len(specs) == 1 else None
    gen = None
    if spec is not None:
        keys = sorted((k for k in r.generations.hw_key if spec.hw_key.startswith(k)),
                      key=len, reverse=True)
        gen = r.generations.hw_key[keys[0]] if keys else None
    if gen is None and len(ccs) == 1:
        gen = r.generations.cc.get(next(iter(ccs)))
    dtypes = tuple(d for d, key in r.tensor_dtypes.items()
                   if spec is not None and spec.peak_flops(key))
    return (spec.vendor or None) if spec else None, gen, dtypes


def compiled(store: Store) -> bool:
    """torch.compile ran (part of) the captured step: its compiled-function host ops are in the
    trace (frames.yaml `compiled`)."""
    prefixes = frames.compiled_prefixes()
    return bool(store.sql("SELECT 1 FROM f_host WHERE kind IN ('op', 'annotation') AND ("
                          + " OR ".join("starts_with(name, ?)" for _ in prefixes)
                          + ") LIMIT 1", prefixes).fetchall())


def compute(store: Store, artifacts: tuple[str, ...] | list[str], metrics_engine: str | None,
            training_markers: list[str], code_site: str) -> CaptureContext:
    """`code_site`: the fix_where.yaml key Views.code_site names (own-frame, library-only,
    or why no frame can be named)."""
    kinds = tuple(sorted({str(k) for (k,) in store.sql(
        "SELECT DISTINCT kind FROM artifacts WHERE path IN (SELECT unnest($p))",
        {"p": list(artifacts)}).fetchall()}))
    runtime = frames.runtime_of([n for (n,) in store.sql(
        _SAMPLED + " LIMIT 5000").fetchall()])
    names = _names(store)
    engine = _engine(names, metrics_engine)
    fws = list(_frameworks(names, kinds, runtime))
    if engine is not None and engine.value != "transformers" and not any(
            f.value == "pytorch" for f in fws) and engine.value in rules().generative_engines:
        fws.append(Fact("pytorch", f"{engine.value} runs on PyTorch"))
    vendor, gen, dtypes = _gpu(store)
    kernels = bool(store.sql("SELECT (SELECT count(*) FROM f_gpu WHERE kind = 'kernel')"
                             " + (SELECT count(*) FROM profiled_kernels)").fetchall()[0][0])
    return CaptureContext(
        frameworks=tuple(fws), phase=_phase(store, engine, training_markers), engine=engine,
        models=_models(store, names, engine), vendor=vendor, generation=gen, dtypes=dtypes,
        sources=kinds, compiled=compiled(store), kernels=kernels,
        code={"own-frame": "own", "library-only": "library"}.get(code_site))


def describe(c: CaptureContext) -> str:
    """One line: what the capture shows of the program (the recap's context line)."""
    fw = ", ".join(f.value for f in c.frameworks) or "no framework frames (plain CUDA or unknown)"
    parts = [f"framework: {fw}"]
    if c.engine is not None:
        parts.append(f"engine: {c.engine.value}")
    if c.phase is not None:
        parts.append(c.phase.value)
    if c.models:
        parts.append("model: " + ", ".join(m.value for m in c.models))
    if c.generation:
        parts.append(f"GPU: {c.generation}"
                     + (f" ({'/'.join(c.dtypes)} tensor cores)" if c.dtypes else ""))
    return "; ".join(parts)

