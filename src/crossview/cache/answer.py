"""A command's answer kept beside the capture cache's stores (decision 0845): the text
`analyze` wrote and the lines it said on stderr, keyed by every byte it could have read, the
command line, the working folder, crossview's own code and the libraries' files. A second
look at the same capture with the same command prints the kept answer without importing the
analysis (interactive speed, issue 38); any change — an input's bytes, an option, a source
file of crossview, an upgraded library — is another key.

The key hashes each file under the paths given (a folder walked without following folder
links); a file that is not regular (a FIFO, a device), missing or unreadable makes the run
uncacheable, so the readers say what is wrong with it as always. Entries are written to a
temp name and renamed; the name carries the sha256 of the content and an entry that does not
match it (torn, edited) is removed and the command runs. They share the folder's bound with
the stores (entry.evict)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import stat
import sys
from dataclasses import dataclass
from functools import cache
from importlib.util import find_spec
from pathlib import Path

from crossview.cache.key import ANSWER_SUFFIX as SUFFIX
from crossview.cache.key import ANSWERS, content_hash
from crossview.sources import outputs

# the entry layout, part of every key: one JSON line (said, code, inputs), then the text's
# UTF-8 bytes as written (already escaped for the terminal: a 13 MB JSON answer is neither
# parsed nor escaped again, 0.14 s)
FORMAT = 2
# environment the answer may depend on besides the command line: crossview's own settings
# (the cache's aside), where text goes, and the terminal's width
_ENV_PREFIX = "CROSSVIEW_"
_ENV_IGNORED = frozenset({"CROSSVIEW_CACHE_DIR", "CROSSVIEW_CACHE_SIZE"})
_ENV_NAMES = ("COLUMNS", "NO_COLOR", "TERM", "LANG", "LC_ALL", "TZ")
# options that change nothing in the answer (the progress bar only)
_QUIET = frozenset({"-q", "--quiet"})
# libraries whose behaviour shapes an answer: an upgrade rewrites their files
_LIBRARIES = ("duckdb", "numpy", "pyarrow", "yaml", "typer", "rich")


@dataclass(frozen=True)
class Answer:
    text: bytes  # what the command wrote (stdout or -o), as written (core/inert.py escaped)
    said: tuple[str, ...]  # the lines it said on stderr, as printed
    code: int  # its exit status
    inputs: tuple[str, ...]  # the artifacts it read (an -o never lands on one)


@cache
def code_fingerprint() -> str:
    """Every file of the crossview package and the libraries' modules, by stat: a checkout,
    an edit or an upgrade starts new answers. No library is imported (find_spec only)."""
    h = hashlib.sha256(f"{sys.version}\n".encode())
    pkg = Path(__file__).resolve().parents[1]
    for root, dirs, files in os.walk(pkg):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith((".py", ".yaml", ".sql", ".json")):
                st = os.stat(os.path.join(root, name))
                h.update(f"{root}/{name}|{st.st_size}|{st.st_mtime_ns}\n".encode())
    for lib in _LIBRARIES:
        spec = find_spec(lib)
        if spec is None or not spec.origin:
            h.update(f"{lib}: absent\n".encode())
            continue
        st = os.stat(spec.origin)
        h.update(f"{lib}|{spec.origin}|{st.st_size}|{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def _files(path: Path) -> list[Path] | None:
    """The regular files under `path` (itself when a file); None when any is not readable
    as one, or the path is missing."""
    try:
        st = path.stat()
    except OSError:
        return None
    if stat.S_ISREG(st.st_mode):
        return [path]
    if not stat.S_ISDIR(st.st_mode):
        return None
    out = []
    for root, dirs, files in os.walk(path, onerror=_raise):
        dirs.sort()
        for name in sorted(files):
            f = Path(root, name)
            if outputs.is_own_output(f):  # crossview's outputs are never read as inputs
                continue
            try:
                if not stat.S_ISREG(f.stat().st_mode):
                    return None
            except OSError:
                return None  # a dangling link: the readers say so
            out.append(f)
    return out


def _raise(e: OSError) -> None:
    raise e


def key_of(argv: list[str], paths: list[Path], memo: Path | None) -> str | None:
    """The answer's key, or None when the run cannot be cached."""
    h = hashlib.sha256(f"crossview answer {FORMAT} {code_fingerprint()}\n".encode())
    h.update(json.dumps({
        "argv": [a for a in argv if a not in _QUIET], "cwd": os.getcwd(),
        "env": sorted((k, v) for k, v in os.environ.items()
                      if (k.startswith(_ENV_PREFIX) and k not in _ENV_IGNORED)
                      or k in _ENV_NAMES),
        "tty": [_isatty(sys.stdout), _isatty(sys.stderr)],
    }).encode())
    try:
        for p in paths:
            files = _files(p)
            if files is None:
                return None
            for f in files:
                h.update(b"file\0" + os.fsencode(str(f)) + b"\0"
                         + content_hash(f, memo).encode() + b"\n")
    except OSError:
        return None
    return h.hexdigest()[:40]


def _isatty(stream: object) -> bool:
    try:
        return bool(stream.isatty())  # type: ignore[attr-defined]
    except (AttributeError, ValueError):
        return False


def _entries(folder: Path, key: str) -> list[Path]:
    try:
        names = os.listdir(folder / ANSWERS)
    except OSError:
        return []
    return [folder / ANSWERS / n for n in names
            if n.startswith(key + ".") and n.endswith(SUFFIX)]


def lookup(folder: Path, key: str) -> Answer | None:
    """`key`'s answer; None on a miss. An entry whose bytes do not match its name, or that
    does not parse as an answer, is removed."""
    for path in _entries(folder, key):
        try:
            data = path.read_bytes()
            if path.name[len(key) + 1:-len(SUFFIX)] != hashlib.sha256(data).hexdigest()[:16]:
                raise ValueError("content does not match its name")
            head, _, text = data.partition(b"\n")
            d = json.loads(head)
            ans = Answer(text, tuple(map(str, d["said"])), int(d["code"]),
                         tuple(map(str, d["inputs"])))
        except (OSError, ValueError, KeyError, TypeError):
            with contextlib.suppress(OSError):
                path.unlink()
            continue
        with contextlib.suppress(OSError):
            os.utime(path)  # least recently used goes first
        return ans
    return None


def keep(folder: Path, key: str, answer: Answer, max_bytes: int, max_entry_bytes: int,
         max_age_s: float) -> None:
    """Write `answer` under `key` (temp file, then rename) and keep the folder in its bound.
    A cache that cannot be written changes nothing: the answer was already given."""
    from crossview.cache import entry  # lazy: the stores' module imports DuckDB

    meta = {"said": answer.said, "code": answer.code, "inputs": answer.inputs}
    data = json.dumps(meta).encode() + b"\n" + answer.text
    if len(data) > max_entry_bytes:
        return
    name = f"{key}.{hashlib.sha256(data).hexdigest()[:16]}{SUFFIX}"
    try:
        (folder / ANSWERS).mkdir(parents=True, exist_ok=True)
        tmp = folder / ANSWERS / f".{name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
        tmp.write_bytes(data)
        os.replace(tmp, folder / ANSWERS / name)
    except OSError:
        return
    entry.evict(folder, max_bytes, max_age_s, keep=folder / ANSWERS / name)
