"""Command line: thin shells over crossview's functions, one module per command group.

A new command lives in its own module here and is registered by importing it below.
"""

import crossview.cli.whatif  # noqa: F401  (registers `crossview whatif`)
from crossview.cli import analyze, capture, compare, export, lake, mcp, report, sol, synthesis  # noqa: F401  (registers commands)
from crossview.cli.app import app, command_name, main

# `--help` lists commands in workflow order, not in the order their modules were imported
_ORDER = ("inventory", "analyze", "synthesize", "report", "export", "kernels", "sol", "diff",
          "ab", "ingest", "mcp")


app.registered_commands.sort(
    key=lambda c: _ORDER.index(command_name(c)) if command_name(c) in _ORDER else len(_ORDER))

__all__ = ["app", "main"]
