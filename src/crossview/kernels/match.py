"""Kernel identity across profilers: nsys prints `internal::gemvx::kernel<…(int)7…>`, ncu's
CSV the same launch as `kernel<…7…>` (no namespaces, no integer casts).

Two keys, strongest first:
- `signature`: the full demangled name with namespace qualifiers, C-style casts of template
  values (`(int)7` → `7`), leading `std::`, return-type `void` and whitespace removed. Equal
  signatures are the same kernel instantiation (the two cuBLAS gemv variants (int)6 / (int)7
  stay apart).
- `base`: kernels/names.normalize (templates and arguments stripped), last `::`
  component only. Equal bases with different signatures are "same function, other
  instantiation": reported as a weaker join, never merged silently.
"""

from __future__ import annotations

import re

from crossview.kernels.names import normalize

_QUAL = re.compile(r"\b[A-Za-z_]\w*::(?!type\b)")
_CAST = re.compile(r"\((?:unsigned |signed )?(?:bool|char|short|int|long|long long|"
                   r"unsigned)\)(?=-?\d)")
_WS = re.compile(r"\s+")


def signature(name: str) -> str:
    text = _CAST.sub("", name)
    prev = None
    while prev != text:  # nested qualifiers: a::b::c → c
        prev, text = text, _QUAL.sub("", text)
    text = _WS.sub("", text)
    return text.removeprefix("void")


def base(name: str) -> str:
    return normalize(name).rsplit("::", 1)[-1]
