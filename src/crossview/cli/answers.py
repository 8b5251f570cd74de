"""The answer cache in the CLI (cache/answer.py, decisions 0845 and 0914), for the commands
of app.ANSWER_KEPT (`analyze`, `report`, `kernels`, `whatif`, `diff`): a run whose key the
cache holds says the kept lines on stderr, writes the kept text where this run asks (stdout
or -o, with -o's checks) and exits with the kept status, before the analysis is imported; a
run it does not hold records what it says and writes, and keeps it at `emit`."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from crossview.cache import answer
from crossview.cli.app import OPTIONS, capture_cache, ready_to_analyze, write_output, write_utf8


def first_look(paths: list[Path], output: Path | None, kept: bool = True) -> None:
    """The start of a command of app.ANSWER_KEPT: the kept answer and exit, else record this
    run's (`kept` False: a run whose inputs the key cannot hold, not kept) and load what the
    analysis needs. `paths`: every file the answer depends on."""
    if kept:
        replay_or_record(paths, output)
    ready_to_analyze()


def replay_or_record(paths: list[Path], output: Path | None) -> None:
    """Give the kept answer and exit, or start recording this run's."""
    settings = capture_cache()
    if settings is None:
        return
    key = answer.key_of(_without_output(sys.argv[1:]), paths, settings.folder / "hashes")
    if key is None:
        return
    kept = answer.lookup(settings.folder, key)
    if kept is None:
        OPTIONS.said = []

        def keep(written: bytes, inputs: list[Path], code: int) -> None:
            """`written`: the inert UTF-8 bytes `emit` wrote."""
            said, OPTIONS.said, OPTIONS.keep_answer = tuple(OPTIONS.said or ()), None, None
            answer.keep(settings.folder, key, answer.Answer(
                written, said, code, tuple(map(str, inputs))), settings.max_bytes,
                settings.max_entry_bytes, settings.max_age_s)

        OPTIONS.keep_answer = keep
        return
    for line in kept.said:
        print(line, file=sys.stderr)
    if output:  # bytes: written as kept (escaped when kept)
        write_output(output, kept.text, [Path(p) for p in kept.inputs])
    else:
        write_utf8(kept.text)
    OPTIONS.exit_at_once = True  # nothing was loaded to tear down
    raise typer.Exit(kept.code)


def _without_output(argv: list[str]) -> list[str]:
    """The command line less where the answer is written (-o FILE): the same answer."""
    out: list[str] = []
    skip = False
    for a in argv:
        if skip:
            skip = False
        elif a in ("-o", "--output"):
            skip = True
        elif not a.startswith(("--output=", "-o")) or a == "--":
            out.append(a)
    return out
