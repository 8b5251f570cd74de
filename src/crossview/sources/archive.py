"""A .tar / .tar.gz / .tgz / .zip bundle (e.g. one trace per rank) → a temporary folder.

Extraction is defensive: only regular files, no absolute paths, no `..`, no links or
devices; the bytes actually written are counted against a limit (an archive's declared sizes
are not trusted: a zip bomb lies about them). The folder lives until the process exits (removed on
every exit path: sources/tempdirs.py), so the extracted files are what the analysis and its
error lines name (`crossview-<archive>-…`).
"""

from __future__ import annotations

import os
import shutil
import tarfile
import zipfile
from collections.abc import Iterable, Iterator
from pathlib import Path, PurePosixPath
from typing import IO

from crossview.errors import InputError
from crossview.sources import guard, tempdirs

SUFFIXES = (".tar", ".tar.gz", ".tgz", ".zip")
# uncompressed bytes one archive may expand to; CROSSVIEW_ARCHIVE_MAX_BYTES overrides it
MAX_BYTES = int(os.environ.get("CROSSVIEW_ARCHIVE_MAX_BYTES", 64 << 30))
# members one archive may hold (input_limits.yaml max_archive_members: no more than one run
# reads files), counted from the headers before anything is extracted
MAX_MEMBERS = int(os.environ.get("CROSSVIEW_ARCHIVE_MAX_MEMBERS", 0)) or int(
    guard.limit("max_archive_members"))
_CHUNK = 1 << 20


def is_archive(path: Path) -> bool:
    return path.is_file() and path.name.lower().endswith(SUFFIXES)


def _safe_name(path: Path, name: str) -> PurePosixPath:
    p = PurePosixPath(name.replace("\\", "/"))
    if p.is_absolute() or ".." in p.parts or not p.parts or ":" in p.parts[0]:
        raise InputError(path, f"unsafe member path in archive: {name!r}")
    return p


def _copy(path: Path, src: IO[bytes], dest: Path, budget: list[int]) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    with open(dest, "wb") as out:
        while chunk := src.read(_CHUNK):
            budget[0] -= len(chunk)
            if budget[0] < 0:
                raise InputError(path, f"archive expands past {budget[1]:,} bytes (its "
                                 "budget: CROSSVIEW_ARCHIVE_MAX_BYTES, half the temp folder's "
                                 "free space, 200× the archive's size): a bomb? refused")
            out.write(chunk)


def _members(path: Path, skipped: list[str] | None = None
             ) -> Iterator[tuple[str, IO[bytes]]]:
    """(name, stream) of each regular file; links, devices and folders are skipped."""
    if path.name.lower().endswith(".zip"):
        if _zip_entries(path) > MAX_MEMBERS:  # from its end record: the central directory
            # of a million entries is never parsed
            raise InputError(path, f"archive has more than {MAX_MEMBERS:,} members "
                             "(CROSSVIEW_ARCHIVE_MAX_MEMBERS): refused before extracting")
        with zipfile.ZipFile(path) as z:
            infos = [i for i in z.infolist() if not i.is_dir()]
            if len(infos) > MAX_MEMBERS:
                raise InputError(path, f"archive has more than {MAX_MEMBERS:,} members "
                                 "(CROSSVIEW_ARCHIVE_MAX_MEMBERS): refused before extracting")
            for i in infos:
                if (i.external_attr >> 16) & 0o170000 == 0o120000:  # a symlink entry
                    if skipped is not None:
                        skipped.append(i.filename)
                    continue
                with z.open(i) as f:
                    yield i.filename, f
        return
    with tarfile.open(path, "r:*") as t:
        members = []
        for n, m in enumerate(t):  # headers only: counted before anything is extracted
            if n >= MAX_MEMBERS:
                raise InputError(path, f"archive has more than {MAX_MEMBERS:,} members "
                                 "(CROSSVIEW_ARCHIVE_MAX_MEMBERS): refused before extracting")
            members.append(m)
        for m in members:
            if not m.isreg():
                if skipped is not None and not m.isdir():
                    skipped.append(m.name)
                continue
            member = t.extractfile(m)
            if member is not None:
                yield m.name, member


def _zip_entries(path: Path) -> int:
    """Entries a zip says it holds (its end-of-central-directory record, zip64 included),
    read before the central directory is parsed; 0 when there is no such record (ZipFile
    then says what is wrong)."""
    end_record = getattr(zipfile, "_EndRecData", None)
    if end_record is None:
        return 0
    with open(path, "rb") as f:
        rec = end_record(f)
    return int(rec[getattr(zipfile, "_ECD_ENTRIES_TOTAL", 4)]) if rec else 0


def _budget(dest: Path, archive: Path) -> int:
    """Bytes one archive may expand to: MAX_BYTES, and at most a share of the temp folder's
    free space (input_limits.yaml archive_free_disk_share) — a bomb stops before the disk
    fills, with one line naming the budget."""
    try:
        free = shutil.disk_usage(dest).free
    except OSError:
        return MAX_BYTES
    return max(0, min(MAX_BYTES, int(free * float(guard.limit("archive_free_disk_share"))),
                      guard.ratio_budget(archive.stat().st_size)))


def extract(path: Path, skipped: list[str] | None = None) -> Path:
    """Extract into a fresh temporary folder; the folder is removed at exit (and, if this
    process is killed, by the next run: sources/tempdirs.py)."""
    guard.check_open(path)
    dest = Path(tempdirs.make(path.name))  # removed on every exit path (tempdirs)
    guard.allow_own(dest)
    cap = _budget(dest, path)
    budget = [cap, cap]  # [left, total]
    n = 0
    try:
        for name, stream in _members(path, skipped):
            _copy(path, stream, dest / _safe_name(path, name), budget)
            n += 1
        if n == 0:
            raise InputError(path, "empty archive: it holds no regular file", "empty")
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError, ValueError) as e:
        tempdirs.remove(dest)
        raise InputError(path, f"corrupt or unreadable archive: {e}") from None
    except BaseException:
        tempdirs.remove(dest)
        raise
    return dest


def expand(paths: Iterable[Path]) -> tuple[list[Path], list[InputError]]:
    """Archives become their extracted folders; other paths pass through unchanged."""
    out: list[Path] = []
    bad: list[InputError] = []
    for p in paths:
        if is_archive(p):
            links: list[str] = []
            try:
                out.append(extract(p, links))
            except InputError as e:
                bad.append(e)
            if links:  # said, not silently dropped (status skipped: a warning, not exit 2)
                bad.append(InputError(p, f"{len(links):,} link/device member(s) not extracted "
                                      f"(only regular files are read; first: "
                                      f"{guard.quote(links[0], 60)})", "skipped"))
        else:
            out.append(p)
    return out, bad
