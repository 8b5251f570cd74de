"""The protobuf wire format, decoded by hand (no generated code): enough for pprof.

https://protobuf.dev/programming-guides/encoding/ — a message is a run of (tag, value) pairs,
tag = field_number << 3 | wire_type; 0 varint, 1 fixed64, 2 length-delimited, 5 fixed32.
Groups (3, 4) are deprecated and refused. `WireError` says where the bytes stop making sense.
"""

from __future__ import annotations

from collections.abc import Iterator

VARINT, I64, LEN, I32 = 0, 1, 2, 5
Field = tuple[int, int, "int | memoryview"]


class WireError(ValueError):
    pass


def varint(buf: memoryview, i: int) -> tuple[int, int]:
    shift = result = 0
    n = len(buf)
    while True:
        if i >= n:
            raise WireError(f"truncated varint at byte {i:,}")
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, i
        shift += 7
        if shift > 63:
            raise WireError(f"varint longer than 10 bytes at byte {i:,}")


def fields(buf: memoryview, base: int = 0) -> Iterator[Field]:
    """(field number, wire type, value) for each field of one message; a LEN value is a
    memoryview into `buf`. `base` is the message's offset in the file, for error positions."""
    i, n = 0, len(buf)
    while i < n:
        tag, i = varint(buf, i)
        num, wt = tag >> 3, tag & 7
        if num == 0:
            raise WireError(f"field number 0 at byte {base + i:,}")
        if wt == VARINT:
            v, i = varint(buf, i)
            yield num, wt, v
        elif wt == LEN:
            size, i = varint(buf, i)
            if i + size > n:
                raise WireError(f"field {num} at byte {base + i:,} claims {size:,} bytes, "
                                f"{n - i:,} left (truncated?)")
            yield num, wt, buf[i:i + size]
            i += size
        elif wt in (I64, I32):
            width = 8 if wt == I64 else 4
            if i + width > n:
                raise WireError(f"truncated fixed{width * 8} at byte {base + i:,}")
            yield num, wt, int.from_bytes(buf[i:i + width], "little")
            i += width
        else:
            raise WireError(f"wire type {wt} (field {num}) at byte {base + i:,} is not "
                            "protobuf data")


def ints(wt: int, value: int | memoryview) -> list[int]:
    """A repeated integer field: packed (one LEN of varints) or one plain varint."""
    if wt == VARINT:
        assert isinstance(value, int)
        return [value]
    if wt != LEN or not isinstance(value, memoryview):
        raise WireError(f"integer field with wire type {wt}")
    out: list[int] = []
    i, n = 0, len(value)
    while i < n:
        v, i = varint(value, i)
        out.append(v)
    return out


def signed(v: int) -> int:
    """int64 as a varint: two's complement over 64 bits."""
    return v - (1 << 64) if v >= 1 << 63 else v


def text(value: int | memoryview) -> str:
    if not isinstance(value, memoryview):
        raise WireError("string field is not length-delimited")
    return bytes(value).decode("utf-8", "replace")


