"""Claims are typed data (issue 37; core/claim.py): every numeric field of a pattern's facts
carries its unit as its annotation, and the claims detectors return on real captures name only
declared patterns, fix entries, evidence keys and caveats — no prose (the prose is the
pattern's `phrase`, written from these fields)."""

from __future__ import annotations

import re
import typing
from functools import cache
from pathlib import Path

import msgspec
import pytest

from conftest import SHARED_DATA, shared_file
from crossview.core.claim import Claim, Facts
from crossview.detectors import declarations
from crossview.knowledge.loader import load_typed, load_yaml
from crossview.scope.filter import Filter
from crossview.scope.resolve import resolve
from crossview.sources.registry import read_all
from crossview.store.store import Store
from crossview.verdict import claims
from crossview.views.views import Views

# integer fields that are identities, not quantities (no unit)
IDS = {"device", "stream", "rank", "number", "artifact_id", "busiest_core", "peer",
       "start_ns", "first_ns"}
SLUG = re.compile(r"^[a-z0-9_./-]*$")


def _structs() -> list[type[msgspec.Struct]]:
    declarations()  # every detector module imported
    seen: dict[type, None] = {}
    todo: list[type] = list(_subclasses(Facts))
    while todo:
        t = todo.pop()
        if t in seen:
            continue
        seen[t] = None
        for f in msgspec.structs.fields(t):
            for inner in _types(f.type):
                if isinstance(inner, type) and issubclass(inner, msgspec.Struct):
                    todo.append(inner)
    return list(seen)


def _subclasses(t: type) -> list[type]:
    out = []
    for s in t.__subclasses__():
        out += [s, *_subclasses(s)]
    return out


def _types(tp: object) -> list[object]:
    args = typing.get_args(tp)
    if typing.get_origin(tp) is typing.Annotated:
        return _types(args[0])
    return [tp, *[x for a in args for x in _types(a)]] if args else [tp]


def _unitless(tp: object) -> bool:
    """A number in the type not inside an Annotated[…, Meta(extra={"unit": …})]."""
    if typing.get_origin(tp) is typing.Annotated:
        if any(isinstance(m, msgspec.Meta) and m.extra and "unit" in m.extra
               for m in typing.get_args(tp)[1:]):
            return False
        return _unitless(typing.get_args(tp)[0])
    if tp in (int, float):
        return True
    if isinstance(tp, type) and issubclass(tp, msgspec.Struct):
        return False  # walked on its own
    return any(_unitless(a) for a in typing.get_args(tp))


def test_every_number_of_the_facts_carries_a_unit() -> None:
    structs = _structs()
    assert len(structs) > 40, len(structs)  # the walk reached the detectors' facts
    missing = []
    for t in structs:
        hints = typing.get_type_hints(t, include_extras=True)
        for f in msgspec.structs.fields(t):
            tp = hints[f.name]
            if _unitless(tp) and f.name not in IDS:
                missing.append(f"{t.__module__}.{t.__name__}.{f.name}")
    assert not missing, missing


@cache
def _claims(path: Path) -> list[tuple[Claim, object]]:
    st = Store()
    read_all([path], st)
    v = Views(st, resolve(st, Filter()), load_typed("thresholds.yaml"))
    return [(c.claim, c.decl) for c in claims(v)]


CAPTURES = ["kineto/kineto_v100_resnet50_workers0.pt.trace.json.gz",
            "kineto/hta_v100_ddp_training.json.gz",
            "kineto/tracelens_b200_vllm_eager_prefill_tp8.json.gz",
            "kineto/tracelens_h100_hf_qwen1.5_0.5b_forward.json.gz",
            "nsys/nvfuser_h200_nsys2025.1.sqlite",
            "ncu/cudacode_rtx2080ti_two_kernels.ncu-rep"]


@pytest.mark.parametrize("name", CAPTURES)
def test_claims_name_only_declared_things(name: str) -> None:
    found = _claims(shared_file(SHARED_DATA / name))
    assert found
    evidence = load_yaml("evidence.yaml")
    caveats = load_typed("verdict.yaml").caveats
    for c, d in found:
        assert c.pattern in d.patterns, (c.pattern, d.patterns)  # type: ignore[attr-defined]
        for s in (c.form, c.lever or "", *c.caveats, *c.relies_on):
            assert SLUG.match(s), (c.pattern, s)  # keys, never sentences
        assert set(c.caveats) <= set(caveats), c.caveats
        for p in c.fix:
            assert p.key in d.fix_keys, (c.pattern, p.key)  # type: ignore[attr-defined]
        for x in c.cites:
            assert x.read in evidence, (c.pattern, x.read)
        assert set(c.owns.causes) <= set(d.causes), (c.pattern, c.owns.causes)  # type: ignore[attr-defined]
        assert c.tier in ("top", "consider", "note")
        assert isinstance(c.facts, Facts)
