"""What the MCP server may touch: paths under its roots, read-only bounded SQL."""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
from mcp.server.mcpserver.exceptions import ToolError

from crossview.errors import CrossviewError
from crossview.sources import guard


class Refused(CrossviewError, ToolError):
    """A tool call the server will not run (path outside the roots, unsafe SQL, too big).
    A ToolError too, so the SDK hands its message to the agent (other errors it hides)."""


def short(value: object) -> str:
    """A value an agent sent, for an error message: escaped, at most a short prefix
    (input_limits.yaml error_quote_chars) — a 20 MB argument is never echoed whole."""
    s = str(value)
    if s.isprintable() and len(s) <= int(guard.limit("error_quote_chars")):
        return s
    return guard.quote(value)


class Roots:
    """The only folders whose files the server opens. Checked on real paths, so a symlink
    (or `..`) that leads out of a root is refused, not followed."""

    def __init__(self, roots: list[Path]) -> None:
        if not roots:
            raise Refused("no --root given: name the folder(s) whose captures the server "
                          "may open")
        self.roots = [Path(r).resolve(strict=False) for r in roots]
        for r in self.roots:
            if not r.is_dir():
                raise Refused(f"--root {r}: not a folder")

    def check(self, path: str) -> Path:
        """The real path of `path` (relative paths are taken from the first root)."""
        shown = short(path)  # an error quotes at most a short, escaped prefix
        if len(path) > 4096 or "\0" in path:
            raise Refused(f"{shown}: not a usable path (too long or holds a NUL byte)")
        p = Path(path).expanduser()
        if not p.is_absolute():
            p = self.roots[0] / p
        try:
            real = p.resolve(strict=False)  # follows every symlink on the way
        except (OSError, RuntimeError) as e:  # a symlink loop, a name too long
            raise Refused(f"{shown}: cannot resolve ({type(e).__name__})") from None
        if not any(real == r or real.is_relative_to(r) for r in self.roots):
            raise Refused(f"{shown}: outside the allowed roots "
                          f"({', '.join(map(str, self.roots))}); symlinks are resolved")
        if not real.exists():
            raise Refused(f"{shown}: no such file or folder")
        return real

    def check_all(self, paths: list[str]) -> list[Path]:
        if not paths:
            raise Refused("paths: give at least one capture file or folder")
        return [self.check(p) for p in paths]

    def check_each(self, paths: list[str]
                   ) -> tuple[list[str], list[Path], list[tuple[str, str]]]:
        """(the paths that pass as given, their real paths, (path shown, problem) per refused
        path): a refused path is reported beside the others, as the CLI reports a bad file,
        unless every path is refused (then the call is, with every sentence)."""
        if not paths:
            raise Refused("paths: give at least one capture file or folder")
        given: list[str] = []
        real: list[Path] = []
        refused: list[tuple[str, str]] = []
        for p in paths:
            try:
                real.append(self.check(p))
                given.append(p)
            except Refused as e:
                quoted, why = short(p), str(e)  # the path itself, escaped, when usable
                shown = guard.show(p) if len(p) <= 4096 and "\0" not in p else quoted
                refused.append((shown, why.removeprefix(f"{quoted}: ")))
        if not real:
            raise Refused("; ".join(f"{shown}: {why}" for shown, why in refused))
        return given, real, refused


# Statements that write, attach or reconfigure: refused even before DuckDB parses the text
# (the parser check below is the real gate; this one gives the clearer message).
_FORBIDDEN = re.compile(
    r"\b(ATTACH|DETACH|COPY|INSERT|UPDATE|DELETE|CREATE|DROP|ALTER|PRAGMA|INSTALL|LOAD|SET|"
    r"RESET|EXPORT|IMPORT|CALL|CHECKPOINT|VACUUM|TRUNCATE|MERGE|USE)\b", re.IGNORECASE)
_STRINGS = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"")  # literals and quoted names


def check_sql(sql: str) -> str:
    """One SELECT / WITH statement, or Refused."""
    text = sql.strip().rstrip(";").strip()
    if not text:
        raise Refused("query: empty SQL")
    bad = _FORBIDDEN.search(_STRINGS.sub("''", text))
    if bad:
        raise Refused(f"query: {bad.group(1).upper()} is not allowed: read-only SELECT/WITH "
                      "only")
    try:
        stmts = duckdb.extract_statements(text)
    except duckdb.Error as e:
        raise Refused(f"query: SQL does not parse: {e}") from None
    if len(stmts) != 1:
        raise Refused(f"query: {len(stmts)} statements: send exactly one SELECT/WITH")
    if stmts[0].type != duckdb.StatementType.SELECT:
        raise Refused(f"query: {stmts[0].type.name} is not allowed: read-only SELECT/WITH only")
    return text


@dataclass
class QueryResult:
    columns: list[str]
    rows: list[list[Any]]
    truncated: bool


def run_query(con: duckdb.DuckDBPyConnection, sql: str, limit: int, timeout_s: float,
              refuse_over_limit: bool) -> QueryResult:
    """Run a checked SELECT with a row limit (fetch limit+1) and a wall-time limit
    (DuckDB interrupt() from a timer thread). File access is switched off first: the
    store is already loaded, so read_csv('/etc/…') and friends have no business here."""
    text = check_sql(sql)
    con.execute("SET enable_external_access = false")  # one-way; the store needs no files
    fired = threading.Event()

    def stop() -> None:
        fired.set()
        con.interrupt()

    timer = threading.Timer(timeout_s, stop)
    timer.start()
    try:
        cur = con.execute(text)
        rows = cur.fetchmany(limit + 1)
        cols = [d[0] for d in cur.description or []]
    except duckdb.Error as e:
        if fired.is_set():
            raise Refused(f"query: stopped after the {timeout_s:g} s time limit: narrow it "
                          "(WHERE, LIMIT, aggregate)") from None
        raise Refused(f"query: {str(e).splitlines()[0]}") from None
    finally:
        timer.cancel()
    if len(rows) > limit and refuse_over_limit:
        raise Refused(f"query: more than {limit:,} rows: aggregate, add LIMIT, or raise "
                      "max_rows (up to the server's cap)")
    return QueryResult(cols, [list(r) for r in rows[:limit]], len(rows) > limit)
