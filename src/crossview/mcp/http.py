"""Streamable HTTP: loopback by default; a bearer token is required beyond loopback.

On loopback the token is optional (any local user can reach stdio servers too); when one is
configured it is required there as well. Compared in constant time. A request carries
exactly one `Authorization` header: with two (one wrong, one right) it is refused, whatever
order a proxy or a framework would read them in (issue 43).

The token comes from a file (`--token-file`, first line) or the environment
(`CROSSVIEW_MCP_TOKEN`); `--token VALUE` still works but warns: every local user can read a
command line (`ps`, /proc/PID/cmdline).
"""

from __future__ import annotations

import hmac
import os
import stat
from pathlib import Path
from typing import Any

from crossview.errors import UsageError

LOOPBACK = {"127.0.0.1", "::1", "localhost"}
ENV = "CROSSVIEW_MCP_TOKEN"
FLAG_WARNING = ("--token puts the token in the process list, where every local user can read "
                f"it: use --token-file PATH or the {ENV} environment variable instead")


def check_bind(host: str, token: str | None) -> None:
    if host not in LOOPBACK and not token:
        raise UsageError(f"--host {host} listens beyond loopback: set --token-file (or "
                         f"{ENV}) so that only clients with the token get in")


def token_of(token_file: Path | None, flag: str | None) -> tuple[str | None, list[str]]:
    """(the token, warnings): from --token-file, else --token (deprecated), else the
    environment; None when none is set. A file that cannot be read, or holds no token, is a
    usage error."""
    if token_file is not None and flag is not None:
        raise UsageError("give the token once: --token-file or --token, not both")
    warnings: list[str] = []
    if token_file is not None:
        try:
            text = token_file.read_text(encoding="utf-8")
            mode = token_file.stat().st_mode
        except (OSError, UnicodeDecodeError) as e:
            why = e.strerror if isinstance(e, OSError) and e.strerror else type(e).__name__
            raise UsageError(f"--token-file {token_file}: cannot read: {why}") from None
        token = text.split("\n", 1)[0].strip()
        if not token:
            raise UsageError(f"--token-file {token_file}: empty (the token is its first "
                             "line)")
        if mode & (stat.S_IRWXG | stat.S_IRWXO):
            warnings.append(f"--token-file {token_file}: other users may read it (mode "
                            f"{stat.S_IMODE(mode):04o}): chmod 600 it")
        return token, warnings
    if flag is not None:
        return flag, [FLAG_WARNING]
    return os.environ.get(ENV) or None, warnings


class BearerAuth:
    """ASGI middleware: 401 unless exactly one `Authorization: Bearer <token>` matches."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            got = [v for k, v in scope.get("headers") or [] if k.lower() == b"authorization"]
            # compared even when the count is wrong: the answer takes the same time
            ok = hmac.compare_digest(got[0] if got else b"", self.expected)
            if len(got) != 1 or not ok:
                why = ("missing or wrong bearer token" if len(got) <= 1 else
                       "more than one Authorization header: send exactly one")
                await send({"type": "http.response.start", "status": 401, "headers": [
                    (b"content-type", b"application/json"),
                    (b"www-authenticate", b"Bearer")]})
                await send({"type": "http.response.body",
                            "body": b'{"error":"' + why.encode() + b'"}'})
                return
        await self.app(scope, receive, send)


def serve(server: Any, host: str, port: int, token: str | None) -> None:
    # lazy: optional dependency (anyio: extra `mcp`)
    import anyio
    import uvicorn

    check_bind(host, token)
    app = server.streamable_http_app(host=host)
    if token:
        app = BearerAuth(app, token)
    cfg = uvicorn.Config(app, host=host, port=port, log_level="warning")
    anyio.run(uvicorn.Server(cfg).serve)
