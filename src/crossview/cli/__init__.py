"""Command line: thin shells over crossview's functions, one module per command group.

A new command lives in its own module here and is registered by importing it below.
"""

from crossview.cli import analyze, capture, compare, export, lake, mcp, report, sol, synthesis  # noqa: F401  (registers commands)
from crossview.cli.app import app, main

__all__ = ["app", "main"]
