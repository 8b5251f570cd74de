""".ncu-rep container check, in pure Python, before the report is handed to ncu_report.

Why: `ncu_report.load_report` silently loads what it can of a cut file (measured: a report
cut at 99% loads 11 of its 12 kernels, one cut at 70% loads none, without an error). The
container is "NVR\\0", a u32-length-prefixed file header, then blocks of
(u32 header length, BlockHeader protobuf, payload of BlockHeader.PayloadSize bytes), where
BlockHeader fields 1, 2, 5 are NumSources, NumResults, PayloadSize (the layout public
.ncu-rep parsers use; both real reports here tile exactly). Walking the blocks tells a
truncated or corrupt file from a whole one and counts the results (profiled kernels) in it.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import BinaryIO

MAGIC = b"NVR\x00"
_NUM_RESULTS = 2
_PAYLOAD_SIZE = 5


@dataclass
class Layout:
    blocks: int
    results: int  # profiled kernel launches the file says it holds
    problem: str | None  # None when the blocks tile the file exactly


def _varint(b: bytes, i: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if i >= len(b) or shift > 63:
            raise ValueError("bad varint")
        x = b[i]
        i += 1
        result |= (x & 0x7F) << shift
        shift += 7
        if not x & 0x80:
            return result, i


def _fields(b: bytes) -> dict[int, int]:
    """Varint fields of one protobuf message (others skipped)."""
    out: dict[int, int] = {}
    i = 0
    while i < len(b):
        key, i = _varint(b, i)
        f, wt = key >> 3, key & 7
        if wt == 0:
            out[f], i = _varint(b, i)
        elif wt == 2:
            n, i = _varint(b, i)
            i += n
        elif wt == 5:
            i += 4
        elif wt == 1:
            i += 8
        else:
            raise ValueError(f"wire type {wt}")
        if i > len(b):
            raise ValueError("field past the end of its message")
    return out


def walk(f: BinaryIO, size: int) -> Layout:
    """Walk the blocks of an open report of `size` bytes; reads headers only (seeks past
    payloads), so a large report costs a few reads."""
    f.seek(0)
    head = f.read(8)
    if len(head) < 8:
        return Layout(0, 0, f"only {size} bytes: truncated before the file header")
    (hsize,) = struct.unpack_from("<I", head, 4)
    off = 8 + hsize
    if off > size:
        return Layout(0, 0, "truncated inside the file header")
    blocks = results = 0
    while off < size:
        if off + 4 > size:
            return Layout(blocks, results, f"truncated at byte {off:,} (block {blocks + 1} "
                          "header length cut)")
        f.seek(off)
        (hlen,) = struct.unpack("<I", f.read(4))
        if off + 4 + hlen > size:
            return Layout(blocks, results, f"truncated at byte {size:,}: block "
                          f"{blocks + 1} header needs {hlen:,} bytes from byte {off + 4:,}")
        try:
            fields = _fields(f.read(hlen))
        except ValueError as e:
            return Layout(blocks, results, f"corrupt block {blocks + 1} header at byte "
                          f"{off:,} ({e})")
        end = off + 4 + hlen + fields.get(_PAYLOAD_SIZE, 0)
        if end > size:
            return Layout(blocks, results, f"truncated: block {blocks + 1} needs "
                          f"{end - size:,} more bytes than the file's {size:,}")
        blocks += 1
        results += fields.get(_NUM_RESULTS, 0)
        off = end
    return Layout(blocks, results, None)
