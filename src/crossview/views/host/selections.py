"""The host-call selections a detector names (store/host_calls.py types: runtime calls by
name, names matching a pattern, calls that launched a GPU copy), and what they select in the
filter's scope, read through the views (a detector never opens the store, decision 0905)."""

from __future__ import annotations

from crossview.store import host_calls
from crossview.store.host_calls import CopyLaunches, NamesMatching, RuntimeCalls
from crossview.views.views import Views

__all__ = ["CopyLaunches", "NamesMatching", "RuntimeCalls", "count_and_ns", "launched",
           "names"]


def count_and_ns(v: Views, sel: host_calls.HostSelection) -> tuple[int, int]:
    """(calls, host ns) of the selection in scope."""
    return host_calls.count_and_ns(v.store, sel)


def names(v: Views, sel: host_calls.HostSelection) -> list[str]:
    """The distinct names of the selected host calls in scope."""
    return host_calls.names(v.store, sel)


def launched(v: Views, sel: CopyLaunches) -> list[tuple[str, str, str, int, int, int]]:
    """Per (launching call, copy kind, memory kinds): GPU ops, GPU ns and bytes in scope, most
    GPU time first."""
    return host_calls.launched(v.store, sel)
