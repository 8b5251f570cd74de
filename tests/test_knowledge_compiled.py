"""Shipped knowledge tables are parsed once and kept as bytecode is (knowledge/loader.py,
decision 0846): a msgspec copy named by the YAML text's digest under __pycache__, read back by
the next process. The copy gives back exactly what the YAML parse gives (every shipped
table, checked here); an edit, a corrupt copy, a value msgpack does not keep and a process
that may not write bytecode each fall back to the parse."""

from __future__ import annotations

import datetime
import sys
from importlib import resources
from pathlib import Path

import msgspec
import pytest
import yaml

from crossview.knowledge import loader

SHIPPED = sorted(p.name for p in Path(str(resources.files("crossview.knowledge"))).glob("*.yaml"))


def _plain(text: str) -> object:
    return yaml.load(text, Loader=yaml.SafeLoader)  # noqa: S506 (a safe loader)


@pytest.fixture
def writes_bytecode(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", False)


def _copies(folder: Path) -> list[str]:
    return sorted(p.name for p in (folder / loader.COMPILED).glob("*.msgpack"))


@pytest.mark.parametrize("name", SHIPPED)
def test_a_shipped_table_reads_back_as_parsed(tmp_path: Path, writes_bytecode: None,
                                              name: str) -> None:
    text = resources.files("crossview.knowledge").joinpath(name).read_text(encoding="utf-8")
    first = loader.parse_shipped(tmp_path, name, text)
    assert len(_copies(tmp_path)) == 1, "the first load compiles the table"
    again = loader.parse_shipped(tmp_path, name, text)
    assert first == again == _plain(text)
    # the same order too (a table's order is its precedence): the same bytes encoded
    assert msgspec.msgpack.encode(again) == msgspec.msgpack.encode(_plain(text))


def test_an_edit_parses_again_and_replaces_the_old_copy(tmp_path: Path,
                                                        writes_bytecode: None) -> None:
    got = loader.parse_shipped(tmp_path, "t.yaml", "a: 1\nb: [x, y]\n")
    assert got == {"a": 1, "b": ["x", "y"]}
    old = _copies(tmp_path)
    assert loader.parse_shipped(tmp_path, "t.yaml", "a: 2\n") == {"a": 2}
    new = _copies(tmp_path)
    assert len(new) == 1 and new != old
    assert loader.parse_shipped(tmp_path, "t.yaml", "a: 2\n") == {"a": 2}


def test_a_corrupt_copy_is_parsed_again(tmp_path: Path, writes_bytecode: None) -> None:
    loader.parse_shipped(tmp_path, "t.yaml", "a: 1\n")
    (copy,) = (tmp_path / loader.COMPILED).glob("*.msgpack")
    copy.write_bytes(b"\xc1 not msgpack")
    assert loader.parse_shipped(tmp_path, "t.yaml", "a: 1\n") == {"a": 1}
    assert msgspec.msgpack.decode(copy.read_bytes()) == {"a": 1}  # and compiled again


def test_values_msgpack_does_not_keep_are_never_compiled(tmp_path: Path,
                                                         writes_bytecode: None) -> None:
    got = loader.parse_shipped(tmp_path, "t.yaml", "day: 2026-12-07\nn: 1\n")
    assert got == {"day": datetime.date(2026, 12, 7), "n": 1}
    assert _copies(tmp_path) == []
    assert loader.parse_shipped(tmp_path, "t.yaml", "day: 2026-12-07\nn: 1\n") == got


def test_no_copy_where_bytecode_may_not_be_written(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    assert loader.parse_shipped(tmp_path, "t.yaml", "a: 1\n") == {"a": 1}
    assert not (tmp_path / loader.COMPILED).exists()


def test_a_read_only_folder_parses_each_time(tmp_path: Path, writes_bytecode: None) -> None:
    (tmp_path / loader.COMPILED).write_text("a file where the folder would be")
    assert loader.parse_shipped(tmp_path, "t.yaml", "a: 1\n") == {"a": 1}
    assert sorted(p.name for p in tmp_path.iterdir()) == [loader.COMPILED]
