"""Every import inside a function under src/crossview says why it is not at module level
(decision 0902). An import belongs at the top of its module; one is left inside a function
only for a measured start-up path (`crossview --help`, a command's start-up, the MCP server's,
analyze's: decisions 0760, 0902), for an optional dependency (an extra such as `mcp`, `dask`,
`torch`), or so that the user's program (`crossview.capture`) stays light. The import-graph
test counts function-level imports like top-level ones, so one never hides a cycle.

What counts as a reason: a comment `# lazy: <why>` (at least three words) on the import's own
line(s) or in the comment lines directly above the run of imports it belongs to (consecutive
import statements share the comment of the first)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "crossview"
REASON = re.compile(r"#\s*lazy:\s*(\S+\s+){2,}\S")


def unexplained(path: Path) -> list[str]:
    """`file:line: import` for each function-level import of `path` with no reason."""
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    name = path.relative_to(SRC.parent) if path.is_relative_to(SRC) else path.name
    out = []
    for fn in ast.walk(ast.parse(text, str(path))):
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for block in ast.walk(fn):
            for field in ("body", "orelse", "finalbody"):
                body = getattr(block, field, None)
                if not isinstance(body, list):
                    continue
                for i, node in enumerate(body):
                    if not isinstance(node, ast.Import | ast.ImportFrom):
                        continue
                    first = i
                    while first > 0 and isinstance(body[first - 1], ast.Import | ast.ImportFrom):
                        first -= 1
                    own = lines[node.lineno - 1: node.end_lineno]
                    above, j = [], body[first].lineno - 2
                    while j >= 0 and lines[j].lstrip().startswith("#"):
                        above.append(lines[j])
                        j -= 1
                    if not any(REASON.search(x) for x in [*own, *above]):
                        out.append(f"{name}:{node.lineno}: {ast.unparse(node)}")
    return sorted(set(out))


def test_every_function_level_import_gives_its_reason():
    missing = [m for p in sorted(SRC.rglob("*.py")) for m in unexplained(p)]
    assert not missing, ("imports inside functions with no `# lazy: <why>` (hoist each to "
                         "module level unless start-up or an optional dependency needs it "
                         "there):\n" + "\n".join(missing))


def test_the_check_itself(tmp_path):
    """A reason above a run of imports covers the run; a bare comment or none does not."""
    f = tmp_path / "m.py"
    f.write_text("def a():\n    # lazy: start-up of the help path\n    import json\n"
                 "    import os\n\n    x = 1\n    import re\n\n"
                 "def b():\n    import csv  # lazy: optional dependency (none)\n\n"
                 "def c():\n    # late\n    import abc\n\n"
                 "def d():\n    if True:\n        import ast  # lazy:\n")
    got = unexplained(f)
    assert {g.split(": ", 1)[1] for g in got} == {"import re", "import abc", "import ast"}
