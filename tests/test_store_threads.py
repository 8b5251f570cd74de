"""DuckDB threads of a Store: CROSSVIEW_THREADS, else the process's CPU affinity (taskset)."""

from __future__ import annotations

import os

import pytest

from crossview.errors import UsageError
from crossview.store import store as store_mod
from crossview.store.store import Store


def _threads(s: Store) -> int:
    return int(s.sql("SELECT current_setting('threads')").fetchall()[0][0])


def test_env_sets_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CROSSVIEW_THREADS", "1")
    assert _threads(Store()) == 1
    assert _threads(Store(threads=2)) == 2  # an explicit count wins (lake workers)


@pytest.mark.parametrize("bad", ["x", "0", "-2"])
def test_env_bad_value_is_one_clear_error(monkeypatch: pytest.MonkeyPatch, bad: str) -> None:
    monkeypatch.setenv("CROSSVIEW_THREADS", bad)
    with pytest.raises(UsageError, match="CROSSVIEW_THREADS"):
        Store()


def test_affinity_narrower_than_the_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CROSSVIEW_THREADS", raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: {0}, raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    assert store_mod.default_threads() == 1
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: {0, 1, 2, 3}, raising=False)
    assert store_mod.default_threads() is None  # all cores: DuckDB's own default
