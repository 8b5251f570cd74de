"""Every third-party package the code imports is declared in pyproject.toml (issue 14).

Static, so it holds whatever happens to be installed: a fresh `pip install -e .` gets only
the base dependencies, and the test extra must not hide a missing one (it once hid `click`).

Rule: a module-level import (not inside a function, not under `try: … except ImportError`,
not under `if TYPE_CHECKING:`) must be a base dependency — except in a package owned by an
extra (`crossview.mcp` → `mcp`), where it may come from that extra. A lazy import (inside a
function, or guarded) must be declared in the base dependencies or in some extra. And no
module outside an extra-owned package imports one at module level.
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "crossview"

# import name → distribution name, where they differ (PEP 503-normalized)
DIST_OF = {"yaml": "pyyaml", "markdown_it": "markdown-it-py", "ncu_report": "ncu-report",
           "pynvml": "nvidia-ml-py"}
# packages whose modules are only loaded once their extra is installed
EXTRA_OWNED = {"crossview.mcp": "mcp"}


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _req_name(req: str) -> str:
    return _norm(re.split(r"[\s\[<>=!~;]", req.strip(), maxsplit=1)[0])


def _declared() -> tuple[set[str], dict[str, set[str]]]:
    proj = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    base = {_req_name(r) for r in proj["dependencies"]}
    extras = {k: {_req_name(r) for r in v} for k, v in proj["optional-dependencies"].items()}
    return base, extras


def _module_name(path: Path) -> str:
    rel = path.relative_to(SRC.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _guarded_try(node: ast.Try) -> bool:
    for h in node.handlers:
        names = []
        if isinstance(h.type, ast.Name):
            names = [h.type.id]
        elif isinstance(h.type, ast.Tuple):
            names = [e.id for e in h.type.elts if isinstance(e, ast.Name)]
        if {"ImportError", "ModuleNotFoundError"} & set(names):
            return True
    return False


def _imports(tree: ast.Module) -> list[tuple[str, bool]]:
    """(top-level module name, at module level unguarded) for every absolute import."""
    out: list[tuple[str, bool]] = []

    def visit(node: ast.AST, eager: bool) -> None:
        if isinstance(node, ast.Import):
            out.extend((a.name, eager) for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.append((node.module, eager))
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            for c in ast.iter_child_nodes(node):
                visit(c, False)
            return
        elif isinstance(node, ast.Try) and _guarded_try(node):
            for c in node.body:
                visit(c, False)
            for c in node.handlers + node.orelse + node.finalbody:
                visit(c, eager)
            return
        elif isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for c in node.orelse:
                visit(c, eager)
            return
        for c in ast.iter_child_nodes(node):
            visit(c, eager)

    visit(tree, True)
    return out


def _owner(module: str) -> str | None:
    for pkg, extra in EXTRA_OWNED.items():
        if module == pkg or module.startswith(pkg + "."):
            return extra
    return None


def test_every_import_is_declared() -> None:
    base, extras = _declared()
    any_extra = set().union(*extras.values())
    problems = []
    files = sorted(SRC.rglob("*.py"))
    assert len(files) > 100  # the whole package, not an empty glob
    for path in files:
        mod = _module_name(path)
        owner = _owner(mod)
        for name, eager in _imports(ast.parse(path.read_text(encoding="utf-8"))):
            top = name.split(".")[0]
            where = f"{path.relative_to(ROOT)}: import {name}"
            if top in sys.stdlib_module_names or top == "__future__":
                continue
            if top == "crossview":
                if eager and owner is None and _owner(name):
                    problems.append(f"{where} at module level pulls in the "
                                    f"'{_owner(name)}' extra for every user")
                continue
            dist = _norm(DIST_OF.get(top, top))
            if dist in base:
                continue
            if eager and owner is None:
                problems.append(f"{where}: {dist} is not a base dependency (declare it, "
                                "or import it lazily and put it in an extra)")
            elif eager and dist not in extras.get(owner or "", set()):
                problems.append(f"{where}: {dist} is not in the '{owner}' extra")
            elif dist not in any_extra:
                problems.append(f"{where}: {dist} is declared nowhere in pyproject.toml")
    assert not problems, "\n".join(problems)


def test_rule_catches_an_undeclared_module_level_import(tmp_path: Path) -> None:
    """The checker itself: click at module level (the bug this test was written for)."""
    tree = ast.parse("import click\ntry:\n    import torch\nexcept ImportError:\n"
                     "    torch = None\ndef f():\n    import pynvml\n")
    assert _imports(tree) == [("click", True), ("torch", False), ("pynvml", False)]
    base, extras = _declared()
    assert "click" not in base and "typer" in base
    assert "torch" in extras["capture"] and "nvidia-ml-py" in extras["nvml"]


def test_py_typed_ships() -> None:
    assert (SRC / "py.typed").is_file()
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "py.typed" in data["tool"]["setuptools"]["package-data"]["crossview"]
