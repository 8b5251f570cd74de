"""Errors quote at most a short, escaped prefix of what the client sent (issue 18).

The SDK echoes client-supplied names whole: `Method not found` carries the method as `data`,
`Unknown tool: <name>`, `Unknown prompt: <name>`, `Unknown resource: <uri>` (twice) — a 20 MB
method name came back whole, and an unknown 100 KB prompt name was logged as a rich
traceback for minutes. This server middleware (it wraps every request, on stdio and HTTP)
rewrites every error the server returns — a JSON-RPC error or a tool's error result — so a
long or non-printable client value is quoted as `guard.quote` does (escaped, at most
input_limits.yaml `error_quote_chars`, with its length) and the whole text is at most
`mcp_max_error_chars`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, METHOD_NOT_FOUND
from pydantic import ValidationError

from crossview.core import inert
from crossview.sources import guard

log = logging.getLogger("crossview.mcp")


def bounded(text: str, sent: Iterable[str] = ()) -> str:
    """`text` with each long or unprintable client value in it quoted short, non-printable
    characters escaped, and at most `mcp_max_error_chars` characters."""
    n = int(guard.limit("error_quote_chars"))
    for value in sorted({s for s in sent if isinstance(s, str)}, key=len, reverse=True):
        if value and (len(value) > n or not value.isprintable()) and value in text:
            text = text.replace(value, guard.quote(value))
    cap = int(guard.limit("mcp_max_error_chars"))
    out = inert.name(text[:cap])
    return out + (f"… ({len(text):,} characters)" if len(text) > cap else "")


def _sent(method: str, params: Mapping[str, Any] | None) -> list[str]:
    """The client's names an error may echo: the method, a tool/prompt name, a resource uri."""
    out = [method]
    if isinstance(params, Mapping):
        out += [v for k in ("name", "uri") if isinstance(v := params.get(k), str)]
    return out


def _data(data: Any, sent: list[str]) -> Any:
    if isinstance(data, str):
        return bounded(data, sent)
    if isinstance(data, Mapping):
        return {bounded(str(k), sent): _data(v, sent) for k, v in list(data.items())[:20]}
    return data if isinstance(data, int | float | bool) or data is None else None


def _tool_error(result: Any, sent: list[str]) -> Any:
    """A tool's error result (`isError`) with its text bounded like any error."""
    if isinstance(result, dict) and result.get("isError") and isinstance(
            result.get("content"), list):
        for part in result["content"]:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                part["text"] = bounded(part["text"], sent)
    return result


class BoundedEcho:
    """Server middleware: `(ctx, call_next) -> result`, every error bounded."""

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        sent = _sent(ctx.method, ctx.params)
        if getattr(ctx, "request_id", None) is None:  # a notification: nothing to answer,
            return await self._notification(ctx, call_next, sent)  # nothing logged whole
        if len(ctx.method) > int(guard.limit("error_quote_chars")):
            raise MCPError(METHOD_NOT_FOUND, bounded(f"Method not found: {ctx.method}", sent))
        try:
            return _tool_error(await call_next(ctx), sent)
        except MCPError as e:
            raise MCPError(e.code, bounded(e.message, sent), _data(e.data, sent)) from None
        except ValidationError:
            raise  # the SDK answers INVALID_PARAMS without pydantic's text
        except Exception as e:  # the SDK would log a traceback holding the client's value
            why = bounded(str(e) or type(e).__name__, sent)
            log.warning("%s failed: %s", bounded(ctx.method, sent), why)
            code = 0 if isinstance(e, ValueError) else INTERNAL_ERROR  # 0: the SDK's own
            raise MCPError(code, why) from None

    async def _notification(self, ctx: Any, call_next: Any, sent: list[str]) -> Any:
        if len(ctx.method) > int(guard.limit("error_quote_chars")):
            log.warning("notification dropped: unknown method %s", bounded(ctx.method, sent))
            return None
        try:
            return await call_next(ctx)
        except Exception as e:  # the SDK would log the client's method and value whole
            log.warning("notification %s failed: %s", bounded(ctx.method, sent),
                        bounded(str(e) or type(e).__name__, sent))
            return None
