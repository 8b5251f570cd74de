"""sources/inflate.py (decision 0904): ISA-L's inflate where it imports, zlib's where it does
not — the same bytes from a real capture, the same one-line error on a corrupt stream, and
the fallback exercised by hiding `isal`. Corrupt and multi-member streams are synthetic."""

from __future__ import annotations

import gzip
import importlib
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from conftest import SHARED_DATA, shared_file
from crossview.errors import InputError
from crossview.sources import guard, inflate

TRACE = SHARED_DATA / "kineto" / "hta_v100_ddp_training.json.gz"
# a gzip header, then bytes no deflate block starts with (BTYPE 11: reserved)
CORRUPT = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff" + b"\xff" * 64


@pytest.fixture(params=["isal", "zlib"])
def impl(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """inflate as loaded with isal importable (when installed) and with it hidden."""
    if request.param == "zlib":
        monkeypatch.setitem(sys.modules, "isal", None)  # `import isal` raises ImportError
    elif importlib.util.find_spec("isal") is None:
        pytest.skip("isal is not installed on this machine (no wheel): zlib serves")
    mod = importlib.reload(inflate)
    monkeypatch.setattr(guard, "inflate", mod)
    yield mod
    monkeypatch.undo()
    importlib.reload(inflate)


def test_same_bytes_as_the_standard_library(impl: ModuleType, tmp_path: Path) -> None:
    path = shared_file(TRACE)
    want = gzip.decompress(path.read_bytes())
    assert len(want) == 53_733_385  # `gzip -dc … | wc -c`
    out = tmp_path / "trace.json"
    guard.gunzip_to(path, out)
    assert out.read_bytes() == want
    assert guard.gunzip(path, path.read_bytes()) == want


def test_which_inflate(impl: ModuleType) -> None:
    hidden = sys.modules.get("isal", ...) is None
    assert (impl._impl is zlib) == hidden
    assert zlib.error in impl.ERRORS and len(impl.ERRORS) == (1 if hidden else 2)


def test_corrupt_stream_is_one_input_error(impl: ModuleType, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json.gz"
    bad.write_bytes(CORRUPT)
    for call in (lambda: guard.gunzip_to(bad, tmp_path / "out.json"),
                 lambda: guard.gunzip(bad, CORRUPT)):
        with pytest.raises(InputError, match=r"corrupt gzip data \("):
            call()


def test_members_and_trailing_bytes(impl: ModuleType, tmp_path: Path) -> None:
    """Members concatenated are read one after the other; bytes after the last are ignored,
    as gzip(1) does."""
    two = tmp_path / "two.gz"
    two.write_bytes(gzip.compress(b'{"a": 1}') + gzip.compress(b'{"b": 2}') + b"\x00\x00")
    out = tmp_path / "two.json"
    guard.gunzip_to(two, out)
    assert out.read_bytes() == b'{"a": 1}{"b": 2}'
