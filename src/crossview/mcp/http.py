"""Streamable HTTP: loopback by default; a bearer token is required beyond loopback.

On loopback the token is optional (any local user can reach stdio servers too); when one is
configured it is required there as well. Compared in constant time."""

from __future__ import annotations

import hmac
from typing import Any

from crossview.errors import UsageError

LOOPBACK = {"127.0.0.1", "::1", "localhost"}


def check_bind(host: str, token: str | None) -> None:
    if host not in LOOPBACK and not token:
        raise UsageError(f"--host {host} listens beyond loopback: set --token (or "
                         "CROSSVIEW_MCP_TOKEN) so that only clients with the token get in")


class BearerAuth:
    """ASGI middleware: 401 unless `Authorization: Bearer <token>` matches."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            got = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(got, self.expected):
                body = b'{"error":"missing or wrong bearer token"}'
                await send({"type": "http.response.start", "status": 401, "headers": [
                    (b"content-type", b"application/json"),
                    (b"www-authenticate", b"Bearer")]})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def serve(server: Any, host: str, port: int, token: str | None) -> None:
    import anyio
    import uvicorn

    check_bind(host, token)
    app = server.streamable_http_app(host=host)
    if token:
        app = BearerAuth(app, token)
    cfg = uvicorn.Config(app, host=host, port=port, log_level="warning")
    anyio.run(uvicorn.Server(cfg).serve)
