"""The SDK's MCPServer with crossview's error contract: a bad call (a missing or wrong
argument, to a tool or to a prompt) is answered with one sentence naming the argument, as
an MCP error result, never a pydantic dump or a traceback on the server's stderr."""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS
from pydantic import ValidationError


def one_sentence(what: str, err: ValidationError) -> str:
    missing = sorted({".".join(map(str, e["loc"])) for e in err.errors()
                      if e["type"] == "missing"})
    wrong = [f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in err.errors()
             if e["type"] != "missing"]
    parts = ([f"missing required argument{'s' if len(missing) > 1 else ''} "
              + ", ".join(f"`{m}`" for m in missing)] if missing else []) + wrong
    return f"{what}: invalid arguments — " + "; ".join(parts) + "."


class Server(MCPServer):
    async def call_tool(self, name: str, arguments: dict[str, Any],
                        context: Any = None) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as e:
            if isinstance(e.__cause__, ValidationError):
                raise ToolError(one_sentence(name, e.__cause__)) from None
            raise

    async def get_prompt(self, name: str, arguments: dict[str, Any] | None = None,
                         context: Any = None) -> Any:
        prompt = self._prompt_manager.get_prompt(name)
        if prompt is not None:
            given = {k for k, v in (arguments or {}).items() if v not in (None, "")}
            missing = [a.name for a in prompt.arguments or [] if a.required
                       and a.name not in given]
            if missing:
                raise MCPError(INVALID_PARAMS, f"prompt {name}: missing required argument "
                               + ", ".join(f"`{m}`" for m in missing)
                               + " (the capture files or folders to diagnose).")
        return await super().get_prompt(name, arguments, context)
