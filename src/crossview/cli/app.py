"""The Typer app and the helpers every command shares (error lines, exit codes, output)."""

from __future__ import annotations

import codecs
import contextlib
import gc
import os
import re
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
import typer.main

from crossview.core import inert
from crossview.errors import CrossviewError, UsageError

if TYPE_CHECKING:
    from crossview.analysis import Analysis
    from crossview.cache.settings import CacheSettings

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  # plain help: wraps at the terminal width (issue 40), and spares importing
                  # Rich (decision 0842)
                  rich_markup_mode=None,
                  help="Cross-view GPU performance analysis of profiler captures.")


class Fmt(StrEnum):
    md = "md"
    json = "json"


class Detail(StrEnum):
    """How much of the recap `analyze` prints (render/markdown.py)."""

    summary = "summary"
    full = "full"


class AnalyzeFmt(StrEnum):
    """`analyze` also writes the HTML report; a separate enum so other commands' --format
    does not offer (and silently ignore) html."""

    md = "md"
    json = "json"
    html = "html"


def error_line(msg: str) -> None:
    _say(f"crossview: error: {_printable(msg)}")


def warning_line(msg: str) -> None:
    _say(f"crossview: warning: {_printable(msg)}")


def _say(line: str) -> None:
    print(line, file=sys.stderr)
    if OPTIONS.said is not None:  # an answer being recorded says it again (cli/answers.py)
        OPTIONS.said.append(line)


def _printable(msg: str) -> str:
    """One line, whatever a file name holds: newlines, ANSI escapes and unpaired surrogates
    (non-UTF-8 names) are escaped, so a name cannot forge a line or break the encoder."""
    return inert.name(msg)


SAME_PROBLEM_LINES = 3  # lines per identical problem before the rest are counted


def per_file_lines(line: Callable[[str], None], items: list[tuple[str, str]]) -> None:
    """One line per (file, problem); past SAME_PROBLEM_LINES files with the same problem, one
    line counts the rest (20,000 junk files: 4 lines, not 20,000)."""
    seen: dict[str, int] = {}
    for path, problem in items:
        seen[problem] = seen.get(problem, 0) + 1
        if seen[problem] <= SAME_PROBLEM_LINES:
            line(f"{path}: {problem}")
    for problem, n in seen.items():
        if n > SAME_PROBLEM_LINES:
            line(f"… and {n - SAME_PROBLEM_LINES:,} more file(s) with the same problem: "
                 f"{problem}")


def parse_window(text: str | None) -> tuple[int, int] | None:
    if text is None:
        return None
    try:
        a, b = text.split(":")
        return int(a), int(b)
    except ValueError:
        raise UsageError(f"--window {text!r}: expected START_NS:END_NS (integers)") from None


def run_analysis(analysis: Callable[[], Analysis], paths: list[Path]) -> Analysis:
    """Run an analysis; one error line per rejected input; exit 2 when nothing was read."""
    # lazy: `crossview --help` and every command's start-up import only what they run (0902)
    from crossview.cli import progress_bar
    from crossview.progress import reporting

    try:
        with reporting(progress_bar.make(OPTIONS.quiet)):  # a bar on a terminal, else silent
            result = analysis()
    except CrossviewError as e:
        error_line(str(e))
        raise typer.Exit(2) from None
    per_file_lines(error_line, [(r.path, "; ".join(r.problems)) for r in result.rejected])
    warned = []
    for r in result.warned:  # read in part, or skipped by a folder walk: said, not silent
        said = "; ".join(r.problems)
        state = "" if r.status == "ok" or said.startswith(f"{r.status}:") else f"{r.status}: "
        warned.append((r.path, state + said))
    per_file_lines(warning_line, warned)
    if result.views is None:
        if not result.rejected:
            error_line("no input files found in " + ", ".join(map(str, paths)))
        raise typer.Exit(2)  # nothing was analyzed: the error lines above say why
    return result


def emit(text: str | bytes, output: Path | None, result: Analysis, code: int = 0) -> None:
    """Write the output (text, or the JSON renderer's UTF-8 bytes), made inert once for the
    write and the kept answer; exit 2 after it when some input was rejected, else `code`."""
    emit_to(text, output, [Path(a.path) for a in result.artifacts],
            2 if result.rejected else code)


def emit_to(text: str | bytes, output: Path | None, inputs: list[Path], code: int,
            then: Callable[[], None] | None = None) -> None:
    """`emit` for a command whose result is not an Analysis (`whatif`, `diff`): `inputs` are
    what -o must not land on; `then` says what follows the output (a gate's verdict line),
    before the answer is kept; exit `code` after."""
    data = inert.encoded(text) if isinstance(text, bytes) else inert.text(text).encode()
    if output:
        write_output(output, data, inputs)
    else:
        write_utf8(data)
    if then is not None:
        then()
    if OPTIONS.keep_answer is not None:  # once written: kept for a second look
        OPTIONS.keep_answer(data, inputs, code)
    if code:
        raise typer.Exit(code)


def write_stdout(text: str) -> None:
    """What a command prints: no control character, ANSI sequence or bidi override from a
    name reaches the terminal (core/inert.py; JSON stays valid, the same values)."""
    sys.stdout.write(inert.text(text))


def write_utf8(data: bytes) -> None:
    """Inert UTF-8 text on stdout: as bytes where stdout writes UTF-8, else through its own
    encoding (as `write_stdout` writes the same text)."""
    enc = getattr(sys.stdout, "encoding", None) or ""
    buf = getattr(sys.stdout, "buffer", None)
    if buf is not None and codecs.lookup(enc or "ascii").name == "utf-8":
        sys.stdout.flush()
        buf.write(data)
    else:
        sys.stdout.write(data.decode("utf-8", "backslashreplace"))


def write_output(output: Path, data: str | bytes, inputs: list[Path]) -> None:
    """-o: never onto an input (one error line), says when it overwrites, and is marked so a
    later folder walk does not read it back as a capture (sources/outputs.py)."""
    # lazy: `crossview --help` and every command's start-up import only what they run (0902)
    from crossview.sources import outputs

    if isinstance(data, str):  # a recap, JSON, HTML, folded stacks: as on the terminal
        data = inert.text(data)
    try:
        outputs.write(output, data, inputs, quiet=OPTIONS.quiet)
    except UsageError as e:
        error_line(str(e))
        raise typer.Exit(2) from None
    except OSError as e:
        error_line(f"-o {output}: cannot write: {e.strerror or e}")
        raise typer.Exit(2) from None


@dataclass
class GlobalOptions:
    quiet: bool = False  # --quiet: no progress bar
    # set by a command whose work all ran in this process and is written out (`analyze`
    # without --workers/--dask): the process then exits without tearing down its modules,
    # its store and its objects one by one (0.1 s after a 334 MB Kineto analyze)
    exit_at_once: bool = False
    # the answer cache (cli/answers.py): the lines said while an answer is recorded, and what
    # keeps it once written; None when this run's answer is not kept
    said: list[str] | None = None
    keep_answer: Callable[[bytes, list[Path], int], None] | None = None


OPTIONS = GlobalOptions()


def check_size(option: str, text: str) -> None:
    if not re.fullmatch(r"\s*\d+(\.\d+)?\s*([KMGT]i?B|B)?\s*", text, re.I):
        raise UsageError(f"{option} {text!r}: expected a size such as 500MB or 2GB")


def capture_cache() -> CacheSettings | None:
    """The capture cache this run reads and writes (None: --no-cache)."""
    # lazy: `crossview --help` and every command's start-up import only what they run (0902)
    from crossview.cache.settings import from_env

    return from_env()


def check_memory(text: str | None) -> str | None:
    if text is not None and not re.fullmatch(r"\d+(\.\d+)?\s*(KB|MB|GB|TB|KiB|MiB|GiB|TiB)",
                                             text.strip(), re.I):
        raise UsageError(f"--memory-limit {text!r}: expected a size such as 512MB or 2GB")
    return text


def _version(show: bool) -> None:
    if show:
        # lazy: `crossview --help` and every command's start-up import only what they run (0902)
        from crossview.version import version

        print(f"crossview {version()}")
        raise typer.Exit(0)


@app.callback()
def _root(ctx: typer.Context,
          quiet: Annotated[bool, typer.Option(
        "--quiet", "-q", help="No progress bar while reading inputs.")] = False,
          show_version: Annotated[bool, typer.Option(
              "--version", callback=_version, is_eager=True,
              help="Print crossview's version and exit.")] = False,
          memory_limit: Annotated[str | None, typer.Option(
              "--memory-limit", envvar="CROSSVIEW_MEMORY_LIMIT",
              help="DuckDB memory limit (e.g. 1GB): past it the store spills to the temp "
              "folder, so reading a trace of N GB stays near this limit (docs: bounded "
              "memory). Default: half the memory this process may use (the least of RAM, "
              "its cgroup limit and ulimit -v).")] = None,
          cache_dir: Annotated[Path | None, typer.Option(
              "--cache-dir", envvar="CROSSVIEW_CACHE_DIR",
              help="Keep parsed captures here (default $XDG_CACHE_HOME/crossview or "
              "~/.cache/crossview): a second look at the same file skips the parse.")] = None,
          cache_size: Annotated[str | None, typer.Option(
              "--cache-size", envvar="CROSSVIEW_CACHE_SIZE",
              help="Bound of the cache folder (e.g. 2GB); least recently used entries go "
              "first.")] = None,
          no_cache: Annotated[bool, typer.Option(
              "--no-cache", help="Neither read nor write the capture cache.")] = False
          ) -> None:
    """crossview: why is my GPU workload slow, and what exactly do we change?"""
    OPTIONS.quiet = quiet
    OPTIONS.said = OPTIONS.keep_answer = None  # in-process callers: no earlier run's recording
    try:
        check_memory(memory_limit)
        if cache_size:
            check_size("--cache-size", cache_size)
    except UsageError as e:
        error_line(str(e))
        raise typer.Exit(2) from None
    if memory_limit:
        os.environ["CROSSVIEW_MEMORY_LIMIT"] = memory_limit  # every Store, workers included
    # the capture cache's settings travel as environment (crossview/cache/settings.py)
    for name, value in (("CROSSVIEW_CACHE_DIR", cache_dir), ("CROSSVIEW_CACHE_SIZE", cache_size),
                        ("CROSSVIEW_NO_CACHE", "1" if no_cache else None)):
        if value is not None:
            os.environ[name] = str(value)
    # help loads neither numpy nor the knowledge tables; a command that keeps its answer
    # (cli/answers.py): once that answer is not kept
    if ctx.invoked_subcommand not in ANSWER_KEPT and not help_only(sys.argv[1:]):
        ready_to_analyze()


def main() -> None:
    for stream in (sys.stdout, sys.stderr):  # a non-UTF-8 name in a recap cannot abort it
        with contextlib.suppress(AttributeError, ValueError):
            stream.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]
    # a one-shot process: collect cyclic garbage every 50,000 new objects, not 700 (imports
    # and the views make a few 100 k long-lived objects: 217 collections, 0.06 s, → 2)
    gc.set_threshold(*_GC_THRESHOLDS)
    try:
        _command()()
    except SystemExit as e:
        if OPTIONS.exit_at_once and (e.code is None or isinstance(e.code, int)):
            _exit_now(e.code or 0)
        raise
    except KeyboardInterrupt:
        error_line("interrupted")
        sys.exit(130)
    except (RecursionError, MemoryError) as e:  # a resource limit on some input, not a bug
        # lazy: `crossview --help` and every command's start-up import only what they run (0902)
        from crossview.sources import guard

        error_line(guard.resource_problem(e))
        sys.exit(2)
    except Exception as e:  # a bug, not a user error: one line unless debugging
        if os.environ.get("CROSSVIEW_DEBUG"):
            raise
        if type(e).__name__ == "OutOfMemoryException":  # duckdb's: a resource limit, not a bug
            # lazy: `crossview --help` and every command's start-up import only what they run (0902)
            from crossview.store import memory

            cap = os.environ.get(memory.ENV) or (
                f"the default {memory.limit_text()}, half the memory this process may use")
            error_line(f"out of memory under the memory limit ({cap}): raise --memory-limit "
                       "or read fewer files per run")
            sys.exit(2)
        print(f"crossview: internal error: {type(e).__name__}: {e} "
              "(set CROSSVIEW_DEBUG=1 for the traceback)", file=sys.stderr)
        sys.exit(3)


def help_only(args: list[str]) -> bool:
    """The command line asks for help only (no arguments, or --help / -h before any `--`
    that starts a program's own arguments): nothing will be read or analyzed."""
    for a in args:
        if a == "--":
            return False
        if a in ("--help", "-h"):
            return True
    return not args


def command_name(c: object) -> str:
    """The name a registered command or group answers to (Typer's: the function's name with
    dashes, unless named)."""
    name = getattr(c, "name", None) or getattr(getattr(c, "callback", None), "__name__", "")
    return str(name).replace("_", "-")


# the root callback's options that take a value (`_root`): the word after one is its value,
# not the command (tests/test_cli_one_command.py checks this against the root's parameters)
ROOT_VALUE_OPTIONS = ("--memory-limit", "--cache-dir", "--cache-size")


def invoked(args: list[str]) -> str | None:
    """The command a command line names: the first word past the root options (None: none,
    or the root's help or a `--` first)."""
    words = iter(args)
    for a in words:
        if a in ("--", "--help", "-h"):
            return None
        if a in ROOT_VALUE_OPTIONS:
            next(words, None)
        elif not a.startswith("-"):
            return a
    return None


def _command() -> Any:
    """The app's command, as `app()` runs it, with Typer's readability check taken off every
    path parameter: an unreadable input (mode 000, another user's) is the reader's to refuse
    in one line naming it ("cannot read: Permission denied"), not a usage box that hides the
    other inputs' answers (issue 43).
    A command line that names a command gets a group holding that command only: Typer builds
    each command's parameters from its signature (all 13: 40-60 ms of a first `analyze`,
    one: 5 ms); help, no command or an unknown one get them all."""
    name = invoked(sys.argv[1:])
    every = app.registered_commands, app.registered_groups
    one = [c for c in every[0] if command_name(c) == name]
    sub = [g for g in every[1] if command_name(g) == name]
    try:
        if one or sub:
            app.registered_commands, app.registered_groups = one, sub
        cmd = typer.main.get_command(app)
    finally:
        app.registered_commands, app.registered_groups = every
    groups = [cmd]
    while groups:
        g = groups.pop()
        for p in g.params:
            if hasattr(p.type, "readable"):
                p.type.readable = False
        groups.extend(getattr(g, "commands", {}).values())
    return cmd


_GC_THRESHOLDS = (50_000, 20, 20)
# the commands whose answer a second look prints as kept (cli/answers.py; decisions 0845,
# 0914): each runs `ready_to_analyze` itself, after the lookup
ANSWER_KEPT = frozenset({"analyze", "report", "kernels", "whatif", "diff"})
_BLAS_THREADS = "OPENBLAS_NUM_THREADS"


def ready_to_analyze() -> None:
    """What a command that reads and analyzes needs before it starts: deep but plausible
    call trees (1,200 frames) serialize, and numpy loads with one BLAS thread. Run by the
    root callback for every command but those of ANSWER_KEPT, which run it only when their
    answer is not kept (cli/answers.py), so help and a kept answer load neither numpy nor
    the knowledge tables."""
    # lazy: help and a kept answer load neither the knowledge tables nor numpy (0845)
    from crossview.sources import guard

    guard.deep_stacks()
    _numpy_with_one_blas_thread()


def _numpy_with_one_blas_thread() -> None:
    """Load numpy with one OpenBLAS thread, then give the environment back. crossview makes
    no BLAS call, but numpy's OpenBLAS starts a thread per core at load that spins ~0.1 s
    before it sleeps: CPU taken from DuckDB's parse (334 MB Kineto, 2 cores: 3.4% of all
    samples in `blas_thread_server`, user time −0.1 s; decision 0768). Restored at once, so
    a workload that `capture` or `ab` launches keeps the user's BLAS threads."""
    if "numpy" in sys.modules:  # in-process callers (tests): numpy is loaded already
        return
    before = os.environ.get(_BLAS_THREADS)
    os.environ[_BLAS_THREADS] = "1"
    try:
        # lazy: numpy loads once the BLAS thread variable is set (decision 0768)
        import numpy  # noqa: F401  (OpenBLAS reads the variable when it loads)
    finally:
        if before is None:
            del os.environ[_BLAS_THREADS]
        else:
            os.environ[_BLAS_THREADS] = before


def _exit_now(code: int) -> None:
    """Flush what was printed, remove the store's spill folder (DuckDB removes it only when
    the store is closed) and this process's temp folders, and end the process without the
    interpreter's teardown."""
    # lazy: `crossview --help` and every command's start-up import only what they run (0902)
    from crossview.sources import tempdirs

    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    if "crossview.cache.read" in sys.modules:  # a capture-cache entry still being written
        sys.modules["crossview.cache.read"].finish_writes()
    if "crossview.store.store" in sys.modules:  # a store was opened (not a kept answer)
        shutil.rmtree(sys.modules["crossview.store.store"].spill_dir(), ignore_errors=True)
    tempdirs.remove_all()  # an archive's extracted copy: os._exit skips the atexit hooks
    os._exit(code)
