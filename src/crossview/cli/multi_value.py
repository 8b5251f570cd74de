"""Options that take several files after one flag: `--baseline a.json b.json c.json`.

Typer (and click) give a `list[Path]` option one value per flag, so a shell glob
(`--baseline b-t*.json`) failed with "unexpected extra argument". A command built with
`multi_value(*flags)` rewrites its arguments before parsing: every word after one of `flags`,
up to the next option (a word starting with `-`) or `--`, becomes one more value of that flag.
The repeated form (`--baseline a --baseline b`) is unchanged. A positional argument therefore
goes before such an option, or after another option.
"""

from __future__ import annotations

from typing import Any

import typer
from typer.core import TyperCommand


def expand(args: list[str], flags: frozenset[str]) -> list[str]:
    """`--f a b --g c` → `--f a --f b --g c` for f in flags; `--f=a b` → `--f=a --f b`."""
    out: list[str] = []
    current: str | None = None  # the flag absorbing values
    pending = False  # the flag itself still waits for its first value
    for i, word in enumerate(args):
        if word == "--":
            out.extend(args[i:])
            break
        name = word.split("=", 1)[0] if word.startswith("--") else word
        if name in flags:
            current, pending = name, "=" not in word
            out.append(word)
        elif word.startswith("-") and word != "-":
            current, pending = None, False
            out.append(word)
        elif current is not None and not pending:
            out.extend((current, word))
        else:
            pending = False
            out.append(word)
    return out


def multi_value(*flags: str) -> type[TyperCommand]:
    """A Typer command class whose `flags` take one or more values after one flag."""
    names = frozenset(flags)

    class MultiValueCommand(TyperCommand):
        # typer.Context subclasses the vendored click Context the base names (see cli/capture)
        def parse_args(self, ctx: typer.Context, args: list[str]) -> Any:  # type: ignore[override]
            return super().parse_args(ctx, expand(list(args), names))

    return MultiValueCommand
