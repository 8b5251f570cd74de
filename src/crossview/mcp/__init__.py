"""MCP server: crossview's views as tools an agent can call (`crossview mcp`).

server.py registers the tools (thin); tools_*.py call the existing analysis code;
safety.py keeps every path inside --root and every SQL query read-only and bounded.
"""
