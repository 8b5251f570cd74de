"""Identity across runs: the one normalizer that says two names from two captures are the same
frame, op or kernel (decision 0850).

- `frame_key(name)`: a host frame or op name with what changes from run to run replaced
  (object addresses, decimal object ids, `<eval_with_key>.N`, Dynamo's `__compiled_fn_N`,
  C++ lambda numbers, Inductor / Triton cache hashes, Triton's `_N` suffix, step numbers);
  line numbers kept. The rules are data: knowledge/identity.yaml.
- `kernel_key(name)`: a kernel's matching key (kernels/names.py: templates, argument lists,
  addresses, a return type and Triton's `_N` stripped).
- `op_key(stack, name, shapes)`: an op's identity, its normalized stack, name and the input
  shapes the trace recorded ("" when none).
- `shown(name)`: a name as a person reads it in the recap or the report — CPython's object
  address dropped from a built-in method's frame (identity.yaml `display_rules`, decision
  0911); the name itself unchanged.
- `register(con)`: `frame_key(name)` as a DuckDB SQL function, so a query over a lake or the
  MCP query tool groups frames the way `crossview diff` matches them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cache, lru_cache
from typing import Any

from crossview.kernels.names import normalize as kernel_key
from crossview.knowledge.loader import load_yaml

__all__ = ["RULES_TEXT", "frame_key", "kernel_key", "op_key", "register", "shown", "stack_key"]

RULES_TEXT = ("host frames and ops matched after replacing object addresses (`at 0x…`), "
              "decimal object ids, `<eval_with_key>.N`, `__compiled_fn_N`, lambda numbers, "
              "Inductor/Triton cache hashes, Triton `_N` suffixes and step numbers "
              "(knowledge/identity.yaml; line numbers kept)")


@cache
def _rules(section: str) -> tuple[tuple[re.Pattern[str], str], ...]:
    """identity.yaml's rules of one section (frame_rules, display_rules), compiled."""
    return tuple((re.compile(r["match"]), r["replace"])
                 for r in load_yaml("identity.yaml")[section])


def _applied(section: str, name: str) -> str:
    for pat, rep in _rules(section):
        name = pat.sub(rep, name)
    return name


@lru_cache(maxsize=65536)
def frame_key(name: str) -> str:
    """The identity of a host frame or op name across runs (knowledge/identity.yaml)."""
    return _applied("frame_rules", name)


@lru_cache(maxsize=65536)
def shown(name: str) -> str:
    """A frame or op name as the recap and the report show it (identity.yaml display_rules)."""
    return _applied("display_rules", name)


def stack_key(frames: Iterable[str]) -> str:
    """A call stack (outermost first) as one key of normalized frames."""
    return " › ".join(frame_key(f) for f in frames)


def op_key(stack: str, name: str, shapes: str | None) -> tuple[str, str, str]:
    """(normalized stack, normalized op name, recorded input shapes or "")."""
    return stack, frame_key(name), shapes or ""


def register(con: Any) -> None:
    """Make `frame_key(VARCHAR) → VARCHAR` callable in SQL on a DuckDB connection."""
    try:
        con.create_function("frame_key", frame_key, ["VARCHAR"], "VARCHAR",
                            side_effects=False)
    except Exception as e:  # noqa: BLE001 — already registered on this connection
        if "already exists" not in str(e):
            raise
