"""Kernel name normalization: the key that matches a kernel across two captures.

Two captures of one workload name "the same kernel" differently when template arguments,
argument lists, addresses or generated-code instance numbers change (a new tile shape, another
dtype, a recompiled Triton module). What is stripped, in this order:

1. `(anonymous namespace)` → `(anon)` kept as a word, so the scope survives step 3.
2. Hex addresses `0x…` (pointers printed into a name).
3. Template arguments `<…>` (nested, balanced) and argument lists `(…)` (nested, balanced),
   everything between the brackets included.
4. A leading return type (`void `, `std::enable_if::type `…): only the last space-separated
   word is kept, i.e. the qualified function name.
5. For Triton-generated kernels (`triton_…`) only: a trailing `_<digits>`, the kernel's index
   inside its generated module (`triton_poi_fused__to_copy_1` → `triton_poi_fused__to_copy`).
   Other names keep trailing digits: `…_align4` or a tile size is part of what a kernel is.

Consequence, stated in every output: kernels that differ only in template arguments (e.g. the
`cutlass::Kernel<…>` GEMM tiles, `vectorized_elementwise_kernel<4, MulFunctor…>` vs
`<4, FillFunctor…>`) share one row; `variants` counts the raw names behind it.
"""

from __future__ import annotations

import re

_ANON = "(anonymous namespace)"
_HEX = re.compile(r"0x[0-9a-fA-F]+")
_TRITON_SUFFIX = re.compile(r"_\d+$")
_PAIRS = {"<": ">", "(": ")"}


def _strip_brackets(text: str) -> str:
    """Drop every balanced `<…>` / `(…)` group; `operator<`/`->` style strays are kept as is."""
    out: list[str] = []
    stack: list[str] = []
    for ch in text:
        if ch in _PAIRS:
            stack.append(_PAIRS[ch])
        elif stack and ch == stack[-1]:
            stack.pop()
        elif not stack:
            out.append(ch)
    # an unbalanced name (truncated by the profiler) keeps what came before the open bracket
    return "".join(out)


def normalize(name: str) -> str:
    """The matching key of a kernel name (see the module docstring for the exact rules)."""
    text = name.replace(_ANON, "anon")
    text = _HEX.sub("", text)
    text = _strip_brackets(text).strip()
    if " " in text:
        text = text.rsplit(" ", 1)[1]
    if text.startswith("triton_"):
        text = _TRITON_SUFFIX.sub("", text)
    return text or name
