"""The time account does not depend on how its idle pieces are cut into passes
(views/device/idle_pieces.CHUNK_GAPS gaps per pass, account._PIECES_PER_PASS pieces per sum):
on real captures, tiny passes (a few gaps, spans of host ops reaching across many passes, a
sync's gap rule at every pass boundary) give the same account, field for field, as one pass
over the whole device."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import SHARED_DATA
from crossview.analysis import analyze
from crossview.views.device import account, idle_pieces

CAPTURES = [p for p in (SHARED_DATA / "kineto/kineto_v100_resnet50_workers0.pt.trace.json.gz",
                        SHARED_DATA / "nsys/nvfuser_h200_nsys2025.1.sqlite") if p.exists()]
pytestmark = pytest.mark.skipif(not CAPTURES, reason="../shared/data not present")


@pytest.mark.parametrize("path", CAPTURES, ids=[p.name for p in CAPTURES])
def test_account_same_for_any_pass_size(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    v = analyze([path]).views
    assert v is not None
    monkeypatch.setattr(idle_pieces, "CHUNK_GAPS", 1 << 30)
    monkeypatch.setattr(account, "_PIECES_PER_PASS", 1 << 30)
    whole = account.compute(v.store, v.steps)
    assert whole is not None and any(s.idle_by_cause for d in whole.per_device
                                     for s in d.steps)
    monkeypatch.setattr(idle_pieces, "CHUNK_GAPS", 61)
    monkeypatch.setattr(account, "_PIECES_PER_PASS", 37)
    small = account.compute(v.store, v.steps)
    assert small is not None
    assert small.to_dict() == whole.to_dict()
