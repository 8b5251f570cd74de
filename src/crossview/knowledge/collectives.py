"""Collective type of a communication kernel (collectives.yaml): its args, then the op holding
its launch call, then its name."""

from __future__ import annotations

import re
from functools import cache

from crossview.knowledge.loader import load_yaml

_Rules = tuple[tuple[re.Pattern[str], str | None], ...]


@cache
def _rules(which: str) -> _Rules:
    return tuple((re.compile(r["pattern"], re.IGNORECASE), r.get("type"))
                 for r in load_yaml("collectives.yaml")[which])


def normalize(name: str) -> str:
    """`all_gather`, `AllGather`, `allgather` → `allgather`: one spelling to align ranks by."""
    return name.replace("_", "").replace(" ", "").lower()


def _match(rules: _Rules, text: str) -> str | None:
    for rx, fixed in rules:
        m = rx.search(text)
        if m:
            return fixed or normalize(m.group(1) if m.groups() else m.group(0))
    return None


def name_misleads(kernel_name: str, collective: str) -> bool:
    """The kernel's name spells another collective than the one it ran (collectives.yaml
    `runs_as`: all-to-all runs as SendRecv kernels, all_gather_base as AllGather ones)."""
    runs_as = load_yaml("collectives.yaml")["runs_as"]
    return by_kernel_name(kernel_name) != runs_as.get(collective, collective)


def by_kernel_name(kernel_name: str) -> str:
    """The type the kernel's name spells (the name itself when it spells none)."""
    return _match(_rules("kernels"), kernel_name) or kernel_name


def typed(recorded: str | None, kernel_name: str, launch_op: str | None = None
          ) -> tuple[str, bool]:
    """(the collective type, whether only the kernel name said it). recorded: the kernel's
    "Collective name" arg; launch_op: the name of the op holding the kernel's launch call
    (ProcessGroupNCCL's `nccl:all_reduce` range)."""
    if recorded:
        return normalize(recorded), False
    if launch_op:
        found = _match(_rules("launch_ops"), launch_op)
        if found:
            return found, False
    return by_kernel_name(kernel_name), True


def collective_type(recorded: str | None, kernel_name: str, launch_op: str | None = None
                    ) -> str:
    return typed(recorded, kernel_name, launch_op)[0]
