"""Roles of runtime/driver API names (launch, graph launch, sync, copies), from api_roles.yaml."""

from __future__ import annotations

import re
from functools import cache, lru_cache

from crossview.knowledge.loader import load_yaml

_VERSION_SUFFIX = re.compile(r"_v\d{4,5}$")


def unversioned(name: str) -> str:
    """The API name without the driver's version suffix (cudaLaunchKernel_v7000 →
    cudaLaunchKernel), as api_roles.yaml and causes.yaml list names."""
    return _VERSION_SUFFIX.sub("", name)


@cache
def roles() -> dict[str, frozenset[str]]:
    data = load_yaml("api_roles.yaml")
    return {role: frozenset(names) for role, names in data.items() if role != "sync_python"}


@cache
def _sync_python() -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{p})" for p in load_yaml("api_roles.yaml")["sync_python"]))


def names_with_role(role: str) -> list[str]:
    return sorted(roles()[role])


@lru_cache(maxsize=1 << 16)  # called once per call-tree node; names repeat across paths
def role_of(name: str) -> str | None:
    """The role of one API name, or None for an API with no role here."""
    base = unversioned(name)
    for role, names in roles().items():
        if base in names:
            return role
    if _sync_python().search(name):
        return "sync_ops"
    return None
