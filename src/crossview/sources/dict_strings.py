"""Strings by id as an Arrow dictionary column: a reader hands DuckDB each distinct string
once and an int32 index per row, so an insert makes no per-row lookup or copy of the text
(decisions 0650, 0680)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pyarrow as pa


def dict_strings(idx: npt.NDArray[np.integer], values: pa.Array | list[str],
                 null: npt.NDArray[np.bool_] | None = None) -> pa.DictionaryArray:
    """`values[idx]` as an Arrow dictionary; rows where `null` is set are NULL."""
    vals = values if isinstance(values, pa.Array) else pa.array(values, pa.string())
    indices = pa.array(idx, pa.int32(), mask=null if null is not None and null.any() else None)
    return pa.DictionaryArray.from_arrays(indices, vals)
