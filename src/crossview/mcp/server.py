"""The MCP server: tool, resource and prompt registration only (the work is in tools_*.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from crossview.cache.settings import from_env
from crossview.mcp import guarded, pressure, resources
from crossview.mcp.cache import AnalysisCache
from crossview.mcp.echo import BoundedEcho
from crossview.mcp.safety import Roots
from crossview.mcp.tools_ops import OpTools
from crossview.mcp.tools_synthesis import SynthesisTools
from crossview.mcp.tools_unscoped import OtherTools
from crossview.mcp.tools_views import ViewTools
from crossview.mcp.tools_whatif import WhatIfTools
from crossview.sources import guard

INSTRUCTIONS = (
    "crossview: why is this GPU workload slow and what do we change. Tools read profiler "
    "captures (Kineto, nsys, ncu, metrics, benchmarks) under the server's root folders. "
    "Every result echoes `paths` and `filter`: pass them back to stay on the same scope. "
    "Order: topentities → gpu_metrics → hot_traces gpu → hot_traces cpu → analyze "
    "(prompt `cross_view`). Times are integer ns."
)


def build(roots: list[Path]) -> Any:
    # lazy: optional dependency (mcp: extra `mcp`)
    from mcp.types import ToolAnnotations

    # lazy: optional dependency (the mcp SDK, extra `mcp`: sdk_server imports it)
    from crossview.mcp.sdk_server import Server

    cache = AnalysisCache(Roots(roots), persistent=from_env())
    guard.deep_stacks()  # deep but plausible call trees serialize (input_limits.yaml)
    slots = guarded.limiter()  # bounded concurrency; created lazily by anyio on first use

    def tool(fn: Any) -> Any:  # roots at every open, bounded concurrency, clean errors
        return guarded.wrap(fn, cache.roots.roots, slots)

    views, other = ViewTools(cache), OtherTools(cache)
    # lazy: importlib.metadata is read once a server is built, not when tools import this
    from crossview.version import version

    server = Server("crossview", instructions=INSTRUCTIONS, version=version(),
                    log_level="WARNING")
    server.middleware.append(BoundedEcho())  # errors quote a short prefix of what was sent
    ro = ToolAnnotations(read_only_hint=True, open_world_hint=False)
    fn: Callable[..., str]  # tools of different signatures, all returning JSON text
    for fn in (views.topentities, views.gpu_metrics, views.hot_traces, views.flamegraph,
               views.topfunctions, views.kernels, views.analyze, other.ab_compare,
               other.diff, other.sol_bounds, other.query):
        server.add_tool(tool(fn), name=fn.__name__, annotations=ro, structured_output=False)
    ops = OpTools(cache)
    for fn in (ops.op_roofline, ops.transfers):
        server.add_tool(tool(fn), name=fn.__name__, annotations=ro, structured_output=False)
    syn = SynthesisTools(cache)
    for fn in (syn.inventory, syn.synthesize):
        server.add_tool(tool(fn), name=fn.__name__, annotations=ro, structured_output=False)
    what = WhatIfTools(cache).whatif
    server.add_tool(tool(what), name="whatif", annotations=ro, structured_output=False)

    # resources run guarded like tools: every file they open is checked against the roots
    # where it is opened (a symlink inside a bundle that leads out is refused, not parsed)
    def bundles() -> str:
        """The root folders and their bundles (folders) and captures (files)."""
        return resources.list_bundles(cache)

    def bundle(name: str) -> str:
        """One bundle's artifacts: format read, status, problems, events."""
        return resources.bundle_artifacts(cache, name)

    def views_doc() -> str:
        """The named SQL views `query` reads: every view and column with its unit."""
        return resources.views_catalog()

    server.resource("crossview://views", mime_type="application/json")(views_doc)
    server.resource("crossview://bundles", mime_type="application/json")(tool(bundles))
    server.resource("crossview://bundle/{name}", mime_type="application/json")(tool(bundle))

    @server.prompt("cross_view")
    def cross_view(paths: str) -> str:
        """Walk the cross-view protocol (metrics first, GPU view, CPU cross-check, recap)."""
        return resources.cross_view(paths)

    return server


def run(roots: list[Path], http: bool, host: str, port: int, token: str | None) -> None:
    pressure.apply()  # bounded threads and memory per store, before any store opens
    server = build(roots)
    if http:
        # lazy: optional dependency (uvicorn, extra `mcp`: http imports it)
        from crossview.mcp.http import serve

        serve(server, host, port, token)
    else:
        # lazy: optional dependency (anyio: extra `mcp`)
        import anyio

        # lazy: optional dependency (the mcp SDK, extra `mcp`: stdio_bounded imports it)
        from crossview.mcp import stdio_bounded

        anyio.run(stdio_bounded.serve, server)  # one message at most mcp_max_message_bytes
