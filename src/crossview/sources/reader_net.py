"""The last line of defence at the reader edge: exceptions a reader let through on hostile
input become one problem sentence for that file (the other inputs are still read).

Readers should raise InputError themselves (with the file kind, what is wrong and where);
this turns what slipped past into a sentence instead of an "internal error" that aborts the
whole command. DuckDB's out-of-memory is not caught here (the CLI names the limit).
"""

from __future__ import annotations

import csv
import sqlite3
import struct
import zlib

import duckdb
import pyarrow as pa

from crossview.sources import inflate

CAUGHT: tuple[type[BaseException], ...] = (
    RecursionError, OverflowError, ValueError, UnicodeError, csv.Error, pa.ArrowException,
    duckdb.Error, sqlite3.Error, struct.error, zlib.error, *inflate.ERRORS, MemoryError,
    IndexError, KeyError, TypeError, AttributeError, OSError,
)


def _first_line(e: BaseException) -> str:
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    # DuckDB parser/binder messages end with the query and a caret line: keep the sentence
    keep = [ln for ln in lines if not set(ln) <= {"^", " "} and not ln.startswith("LINE ")]
    text = keep[0] if keep else type(e).__name__
    return text[:200] + ("…" if len(text) > 200 else "")


def problem(e: BaseException) -> str:
    """One sentence for an exception a reader did not turn into an InputError itself."""
    if isinstance(e, RecursionError):
        return "nested too deeply to read (more than ~1,000 levels): refused"
    if isinstance(e, MemoryError):
        return ("too large to read within the memory available (MemoryError): refused; "
                "raise --memory-limit or split the input")
    if isinstance(e, OverflowError):
        return f"a number out of range (beyond 64-bit or infinite): {_first_line(e)}"
    if isinstance(e, UnicodeError):
        return "text that is not valid UTF-8 (or holds unpaired surrogates): refused"
    if isinstance(e, csv.Error):
        return f"malformed CSV: {_first_line(e)}"
    if isinstance(e, pa.ArrowException):
        return f"a value of the wrong type for its column: {_first_line(e)}"
    if isinstance(e, duckdb.Error | sqlite3.Error):
        return f"the database could not be read: {_first_line(e)}"
    if isinstance(e, OSError):
        return f"cannot read: {e.strerror or _first_line(e)}"
    return f"a value of an unexpected kind or shape ({type(e).__name__}: {_first_line(e)})"
