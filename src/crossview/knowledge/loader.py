"""Load the knowledge tables shipped as package data, each checked against its schema.

Every YAML file here has a msgspec schema (knowledge/schemas.py, registered by file name):
a misspelled key, a missing key or a value of the wrong type fails at load with one line
naming the file and the key path (docs/decisions/0361-strict-typed-knowledge.md). Parsed and
checked once per process (cached). A shipped table's parse is kept as bytecode is: a msgpack
copy named by the text's digest under the package's __pycache__, written where Python may
write bytecode, read back by the next process (decision 0846).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sys
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar, get_args, get_origin

import msgspec
import msgspec.msgpack

from crossview.knowledge.schemas import SCHEMAS

T = TypeVar("T")


class KnowledgeError(ValueError):
    """A knowledge table that does not match its schema: one line, file and key path."""


def _parse(text: str) -> Any:
    # lazy: PyYAML's import is ~15 ms (its reader compiles a large pattern); a process whose
    # shipped tables all have compiled copies (decision 0846) never parses YAML
    import yaml

    # libyaml's loader when the wheel has it (several times faster than pure Python)
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(text, Loader=loader)  # noqa: S506 (a safe loader)


COMPILED = "__pycache__"  # the compiled copies live beside the bytecode, under its policy


def parse_shipped(folder: Path, name: str, text: str) -> Any:
    """A shipped table's data: its compiled copy when one was written for this text, else the
    YAML parsed (and, where bytecode may be written, compiled for the next process). The YAML
    parse is most of a first load: fixes.yaml 9 ms, its copy 0.2 ms (issue 38)."""
    digest = hashlib.blake2b(text.encode("utf-8"), digest_size=8).hexdigest()
    copy = folder / COMPILED / f"{name}.{digest}.msgpack"
    try:
        return msgspec.msgpack.decode(copy.read_bytes())
    except (OSError, msgspec.DecodeError):  # none yet, or unreadable: parse the text
        pass
    data = _parse(text)
    if not sys.dont_write_bytecode:
        _compile(copy, name, data)
    return data


def _compile(copy: Path, name: str, data: Any) -> None:
    """Write the copy (atomically: processes may race) and drop the table's older copies; a
    table msgpack would not give back as parsed (a date, a set) and a read-only install are
    parsed each time, as without bytecode."""
    blob = msgspec.msgpack.encode(data)
    back = msgspec.msgpack.decode(blob)
    if back != data or msgspec.msgpack.encode(back) != blob:
        return
    tmp = copy.with_name(f"{copy.name}.{os.getpid()}.tmp")
    try:
        copy.parent.mkdir(exist_ok=True)
        tmp.write_bytes(blob)
        os.replace(tmp, copy)
        for old in copy.parent.glob(f"{name}.*.msgpack"):
            if old != copy:
                old.unlink(missing_ok=True)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)


def _key_path(data: Any, schema: Any, path: str = "$") -> tuple[str, str] | None:
    """msgspec writes a table's key as `[...]`; walk down to the failing entry to name it."""
    try:
        msgspec.convert(data, schema, strict=True)
        return None
    except msgspec.ValidationError as e:
        err = str(e)
    parts: list[tuple[str, Any, Any]] = []
    origin, args = get_origin(schema), get_args(schema)
    if isinstance(schema, type) and issubclass(schema, msgspec.Struct) and isinstance(data, dict):
        parts = [(f".{f.encode_name}", data[f.encode_name], f.type)
                 for f in msgspec.structs.fields(schema) if f.encode_name in data]
    elif origin is dict and isinstance(data, dict):
        parts = [(f".{k}", v, args[1]) for k, v in data.items()]
    elif origin is list and isinstance(data, list):
        parts = [(f"[{i}]", v, args[0]) for i, v in enumerate(data)]
    for step, value, typ in parts:
        deeper = _key_path(value, typ, path + step)
        if deeper:
            return deeper
    return err.split(" - at `")[0], path


def check(data: Any, schema: type[T], where: str) -> T:
    """`data` decoded as `schema` (strict: no unknown keys, no coercion of strings to numbers);
    a mismatch is one KnowledgeError line: `<where>: <what> - at `$.<key path>``."""
    try:
        return msgspec.convert(data, schema, strict=True)
    except msgspec.ValidationError as e:
        msg = str(e)
        if "[...]" in msg:  # name the table's key msgspec elides
            found = _key_path(data, schema)
            if found:
                msg = f"{found[0]} - at `{found[1]}`"
        raise KnowledgeError(f"{where}: {msg}") from None


def load_file(path: str | Path, schema: type[T]) -> T:
    """A YAML file anywhere (a test's edited copy, a user's table) decoded as `schema`."""
    p = Path(path)
    return check(_parse(p.read_text(encoding="utf-8")), schema, str(p))


def _path(name: str) -> str:
    return f"crossview/knowledge/{name}"


@cache
def load_yaml(name: str) -> Any:
    """The file's plain data (dicts and lists), after its schema accepted it."""
    folder = resources.files("crossview.knowledge")
    text = folder.joinpath(name).read_text(encoding="utf-8")
    # a zipped install has no folder to keep compiled copies in: parsed each time
    data = parse_shipped(folder, name, text) if isinstance(folder, Path) else _parse(text)
    schema = SCHEMAS.get(name)
    if schema is None:
        raise KnowledgeError(f"{_path(name)}: no schema in knowledge/schemas.py SCHEMAS")
    check(data, schema, _path(name))
    return data


@cache
def load_typed(name: str) -> Any:
    """The file decoded as its schema's Struct (attribute access, typed)."""
    return check(load_yaml(name), SCHEMAS[name], _path(name))
