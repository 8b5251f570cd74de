"""`crossview inventory BUNDLE` and `crossview synthesize BUNDLE` (issue 5)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from crossview.cli.app import Fmt, app, error_line, per_file_lines, warning_line, write_stdout
from crossview.errors import CrossviewError
from crossview.schema import versioned

if TYPE_CHECKING:
    from crossview.synthesis.inventory import Entry


@app.command()
def inventory(
    bundle: Annotated[Path, typer.Argument(help="Evidence bundle folder (+ bundle.yaml).")],
    fmt: Annotated[Fmt, typer.Option("--format", help="md or json.")] = Fmt.md,
    gpu: Annotated[str | None, typer.Option(help="GPU of captures that name none.")] = None,
) -> None:
    """Every artifact of a bundle: kind, capture validation (with the fix), rigor tier."""
    # lazy: `crossview --help` and every command's start-up import only what they run (0902)
    from crossview.render import inventory_md
    from crossview.synthesis import bundle_context
    try:
        inv = bundle_context.take_inventory(bundle, gpu)
    except CrossviewError as e:
        error_line(str(e))
        raise typer.Exit(2) from None
    write_stdout(json.dumps(versioned(inv.to_dict()), indent=2) + "\n" if fmt == Fmt.json
                     else inventory_md.render(inv))
    _entry_lines(bundle, inv.entries)
    if any(entry.problems for entry in inv.entries):
        raise typer.Exit(2)


@app.command()
def synthesize(
    bundle: Annotated[Path, typer.Argument(help="Evidence bundle folder (+ bundle.yaml).")],
    fmt: Annotated[Fmt, typer.Option("--format", help="md or json (printed).")] = Fmt.md,
    gpu: Annotated[str | None, typer.Option(help="GPU of captures that name none.")] = None,
) -> None:
    """Fuse ≥ 2 sources into reconciliation, contradictions, a ranked ledger, experiments
    and the frontier; writes BUNDLE/findings/synthesis-<UTC>.md and .json."""
    # lazy: `crossview --help` and every command's start-up import only what they run (0902)
    from crossview.render import synthesis_md
    from crossview.synthesis import synthesize as syn_mod
    try:
        syn = syn_mod.run(bundle, gpu)
    except CrossviewError as e:
        error_line(str(e))
        raise typer.Exit(2) from None
    md = synthesis_md.render(syn)
    md_path, js_path = syn.save(md)
    write_stdout(json.dumps(versioned(syn.to_dict()), indent=2) + "\n"
                     if fmt == Fmt.json else md)
    print(f"crossview: wrote {md_path} and {js_path}", file=sys.stderr)
    _entry_lines(bundle, syn.inv.entries)  # the rest was synthesized; say what was not
    if any(entry.problems for entry in syn.inv.entries):
        raise typer.Exit(2)


def _entry_lines(bundle: Path, entries: list[Entry]) -> None:
    """An error line per capture problem, a warning line per doubted entry (identical ones
    past a few counted in one line)."""
    per_file_lines(error_line, [(str(bundle / e.path), f"{p.problem}: {p.detail} (fix: "
                                 f"{p.fix})") for e in entries for p in e.problems])
    per_file_lines(warning_line, [(str(bundle / e.path), "; ".join(e.warnings))
                                  for e in entries if e.warnings])
