"""The persistent per-capture cache (issue 38): the parsed store of a capture kept under the
user's cache folder, keyed by the content of every file read and by crossview's reader code, so
a second `analyze`, `report`, `whatif`, `kernels`, `diff` or MCP call on the same content
skips the parse (docs/decisions/0840).

- settings.py: where the cache lives and whether it is on (CLI options, environment).
- key.py: what a read of some paths depends on, as one key (or why it cannot be cached).
- entry.py: one entry on disk: written to a temp file and renamed, verified before use.
- read.py: `read_inputs`, the readers' `read_all` through the cache.
- answer.py: `analyze`'s kept answer (text, stderr lines, status) for a second look
  (docs/decisions/0845; the CLI side is cli/answers.py).
"""
