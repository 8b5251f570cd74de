"""`crossview mcp`: the MCP server."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from crossview.cli.app import app, error_line, warning_line
from crossview.cli.multi_value import multi_value
from crossview.errors import CrossviewError


@app.command("mcp", cls=multi_value("--root"))
def mcp_server(
    root: Annotated[list[Path], typer.Option(
        help="Folders whose captures the server may open (`--root a b` or repeated; "
        "nothing outside).")],
    http: Annotated[bool, typer.Option(help="Streamable HTTP instead of stdio.")] = False,
    host: Annotated[str, typer.Option(help="HTTP bind address (beyond loopback: --token).")]
    = "127.0.0.1",
    port: Annotated[int, typer.Option(help="HTTP port.")] = 8765,
    token_file: Annotated[Path | None, typer.Option(
        help="File whose first line is the bearer token HTTP clients must send (else the "
        "CROSSVIEW_MCP_TOKEN environment variable).")] = None,
    token: Annotated[str | None, typer.Option(
        help="Deprecated: the token on the command line is visible in the process list; use "
        "--token-file or CROSSVIEW_MCP_TOKEN.")] = None,
) -> None:
    """MCP server: crossview's views as tools for an agent (stdio by default)."""
    try:
        # lazy: optional dependency (mcp: extra `mcp`)
        import mcp  # noqa: F401  (the SDK is an optional extra)
    except ImportError:
        error_line("the MCP server needs the `mcp` extra: pip install 'crossview[mcp]'")
        raise typer.Exit(2) from None
    # lazy: `crossview --help` and every command's start-up import only what they run (0902)
    from crossview.mcp.http import token_of
    from crossview.mcp.server import run as serve

    try:
        secret, warnings = token_of(token_file, token)
        for w in warnings:
            warning_line(w)
        serve(root, http, host, port, secret)
    except CrossviewError as e:
        error_line(str(e))
        raise typer.Exit(2) from None
