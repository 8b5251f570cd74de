"""Data flows one way: no import cycles between crossview modules, none between its packages
(so packages sharing a layer cannot hide one), and no import from a layer above
(tests/import_layers.yaml). The graph is built from the source with `ast`, so imports inside
functions and under `if TYPE_CHECKING:` count like top-level ones."""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

SRC = Path(__file__).resolve().parents[1] / "src"
TABLE = Path(__file__).with_name("import_layers.yaml")


def modules(src: Path, package: str = "crossview") -> dict[str, Path]:
    """Dotted module name → file, for every .py under src/<package>."""
    out = {}
    for p in sorted((src / package).rglob("*.py")):
        parts = list(p.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = p
    return out


def imports(mods: dict[str, Path], package: str = "crossview"
            ) -> dict[str, dict[str, int]]:
    """Module → {imported module of the package: first line}. `from a.b import c` names
    the module a.b.c when it exists, else a.b; relative imports are resolved."""
    graph: dict[str, dict[str, int]] = {}
    for name, path in mods.items():
        is_pkg = path.name == "__init__.py"
        found: dict[str, int] = {}
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    here = name.split(".") if is_pkg else name.split(".")[:-1]
                    here = here[: len(here) - node.level + 1]
                    base = ".".join(here + ([node.module] if node.module else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base
                           for a in node.names]
            for t in targets:
                if t != package and not t.startswith(package + "."):
                    continue
                while t not in mods and "." in t:
                    t = t.rsplit(".", 1)[0]
                if t != name and t in mods:
                    found.setdefault(t, node.lineno)
        graph[name] = found
    return graph


def cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, {})))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                group = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    group.append(w)
                    if w == v:
                        break
                if len(group) > 1:
                    out.append(sorted(group))
    return out


def load_table(path: Path = TABLE) -> tuple[list[str], dict[str, str]]:
    """(layer names lowest first, entry → layer) from the YAML table."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    layers = list(data["layers"])
    entry: dict[str, str] = {}
    for layer, names in data["layers"].items():
        for n in names:
            assert n not in entry, f"{path.name}: {n} is listed twice ({entry[n]}, {layer})"
            entry[n] = layer
    return layers, entry


def entry_of(module: str, entry: dict[str, str], package: str = "crossview") -> str | None:
    """The longest table entry naming the module or a package above it (the unit the map
    places: `sol.llm` apart from the rest of `sol`)."""
    rel = module[len(package) + 1:] if module != package else "__init__"
    parts = rel.split(".")
    for i in range(len(parts), 0, -1):
        if ".".join(parts[:i]) in entry:
            return ".".join(parts[:i])
    return None


def layer_of(module: str, entry: dict[str, str], package: str = "crossview") -> str | None:
    """The layer of the longest table entry naming the module or a package above it."""
    e = entry_of(module, entry, package)
    return entry[e] if e is not None else None


def collapse(graph: dict[str, dict[str, int]], unit: Callable[[str], str | None]
             ) -> dict[str, dict[str, int]]:
    """The graph between units (a module's package, its table entry): an edge wherever a
    module of one unit imports a module of another."""
    out: dict[str, dict[str, int]] = {}
    for m, targets in graph.items():
        um = unit(m)
        if um is None:
            continue
        out.setdefault(um, {})
        for t in targets:
            ut = unit(t)
            if ut is not None and ut != um:
                out[um].setdefault(ut, 1)
                out.setdefault(ut, {})
    return out


def top_package(module: str) -> str:
    """crossview.views.device.steps → views; crossview → __init__."""
    return module.split(".")[1] if "." in module else "__init__"


MODS = modules(SRC)
GRAPH = imports(MODS)
LAYERS, ENTRY = load_table()


def test_every_module_has_a_layer():
    missing = sorted(m for m in MODS if layer_of(m, ENTRY) is None)
    assert not missing, (f"no layer for {', '.join(missing)}: add its package to "
                         f"{TABLE.relative_to(SRC.parent)} (the layer whose modules it "
                         "imports at most)")


def test_every_table_entry_names_a_module():
    stale = sorted(n for n in ENTRY
                   if ("crossview" if n == "__init__" else f"crossview.{n}") not in MODS)
    assert not stale, (f"{TABLE.name} names {', '.join(stale)}, which src/crossview does not "
                       "have: remove the entry or rename it after the move")


def test_no_upward_imports():
    rank = {name: i for i, name in enumerate(LAYERS)}
    up = []
    for m, targets in sorted(GRAPH.items()):
        lm = layer_of(m, ENTRY)
        for t, line in sorted(targets.items()):
            lt = layer_of(t, ENTRY)
            if lm and lt and rank[lt] > rank[lm]:
                up.append(f"{MODS[m].relative_to(SRC)}:{line}: {m} ({lm}) imports {t} "
                          f"({lt}, a higher layer)")
    assert not up, "upward imports:\n" + "\n".join(up)


def test_no_import_cycles():
    found = cycles(GRAPH)
    assert not found, "import cycles:\n" + "\n".join(" ↔ ".join(c) for c in found)


@pytest.mark.parametrize("unit", ["top-level package", "table entry"])
def test_no_package_cycles(unit):
    """A loop between packages is a cycle even when no single module closes it, and even when
    the packages share a layer (scope ↔ views ↔ sol hid that way until decision 0901)."""
    by = top_package if unit == "top-level package" else (lambda m: entry_of(m, ENTRY))
    found = cycles(collapse(GRAPH, by))
    assert not found, (f"import cycles between packages ({unit}):\n"
                       + "\n".join(" ↔ ".join(c) for c in found))


def test_package_cycle_check_sees_a_loop_no_module_closes():
    """The package check itself: a.x → b.y and b.z → a.w close no module cycle, but are a
    package cycle a ↔ b."""
    graph = {"p.a.x": {"p.b.y": 1}, "p.b.y": {}, "p.b.z": {"p.a.w": 1}, "p.a.w": {}}
    assert cycles(graph) == []
    assert cycles(collapse(graph, top_package)) == [["a", "b"]]


def test_graph_sees_function_level_relative_and_type_checking_imports(tmp_path):
    """The checker itself, on a small package: a loop closed only by a function-level
    relative import and one closed under TYPE_CHECKING are both reported."""
    pkg = tmp_path / "toy"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from toy.sub import b\n")
    (pkg / "sub" / "b.py").write_text("def f():\n    from .. import a\n")
    (pkg / "c.py").write_text("from typing import TYPE_CHECKING\n"
                              "if TYPE_CHECKING:\n    import toy.d\n")
    (pkg / "d.py").write_text("from toy import c\n")
    (pkg / "e.py").write_text("import os\nfrom toy.sub.b import f\n")
    mods = modules(tmp_path, "toy")
    graph = imports(mods, "toy")
    assert graph["toy.sub.b"] == {"toy.a": 2}
    assert graph["toy.e"] == {"toy.sub.b": 2}
    assert cycles(graph) == [["toy.c", "toy.d"], ["toy.a", "toy.sub.b"]] or \
        sorted(cycles(graph)) == [["toy.a", "toy.sub.b"], ["toy.c", "toy.d"]]


def test_layer_lookup_takes_the_longest_entry():
    entry = {"sol": "sol", "sol.llm": "opmodels"}
    assert layer_of("crossview.sol.llm", entry) == "opmodels"
    assert layer_of("crossview.sol.roofline", entry) == "sol"
    assert layer_of("crossview.nowhere", entry) is None
    assert entry_of("crossview.sol.llm", entry) == "sol.llm"
    assert entry_of("crossview.sol.roofline", entry) == "sol"


if __name__ == "__main__":
    pytest.main([__file__, "-q"])
