"""The version of crossview's JSON outputs (`--format json`, the synthesis JSON, the Python
API's `to_json`). Bumped when a key changes meaning or disappears; adding a key keeps it."""

from __future__ import annotations

from typing import Any

SCHEMA_VERSION = 1


def versioned(doc: dict[str, Any]) -> dict[str, Any]:
    """`doc` with `schema_version` as its first key."""
    return {"schema_version": SCHEMA_VERSION, **doc}
