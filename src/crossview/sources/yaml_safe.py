"""bundle.yaml (and any user-written YAML) loaded with its alias expansion bounded.

PyYAML's safe loader shares aliased nodes, so a 600-byte "billion laughs" loads at once — and
then explodes in whatever walks it (context fields, JSON output, the MCP result). Here the
document is composed first, the size it would have with every alias expanded is computed on
the node graph (memoized, iterative), and past input_limits.yaml `max_yaml_nodes` it is
refused with one sentence before anything is constructed.
"""

from __future__ import annotations

from typing import Any

import yaml

from crossview.sources import guard

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class YamlBudgetError(yaml.YAMLError):
    """A YAML document past the expansion or alias budget."""


def _expanded_size(root: yaml.Node, cap: int) -> int:
    size: dict[int, int] = {}
    todo: list[tuple[yaml.Node, bool]] = [(root, False)]
    while todo:
        node, done = todo.pop()
        if id(node) in size:
            continue
        kids: list[yaml.Node] = []
        if isinstance(node, yaml.SequenceNode):
            kids = list(node.value)
        elif isinstance(node, yaml.MappingNode):
            kids = [x for kv in node.value for x in kv]
        if not done:
            todo.append((node, True))
            todo.extend((k, False) for k in kids if id(k) not in size)
            continue
        total = 1 + sum(size.get(id(k), 1) for k in kids)
        size[id(node)] = min(total, cap + 1)  # saturate: the answer is only "past the cap?"
    return size[id(root)]


def load(text: str) -> Any:
    """yaml.safe_load with aliases counted and the expanded size bounded."""
    cap = int(guard.limit("max_yaml_nodes"))
    aliases = int(guard.limit("max_yaml_aliases"))
    n_alias = sum(1 for ev in yaml.parse(text, Loader=_Loader) if isinstance(ev, yaml.AliasEvent))
    if n_alias > aliases:
        raise YamlBudgetError(f"{n_alias:,} alias references (more than {aliases}, "
                              "input_limits.yaml max_yaml_aliases): refused")
    node = yaml.compose(text, Loader=_Loader)
    if node is None:
        return None
    if n_alias and _expanded_size(node, cap) > cap:
        raise YamlBudgetError(f"aliases expand the document past {cap:,} nodes (a 'billion "
                              "laughs' bomb? input_limits.yaml max_yaml_nodes): refused")
    return yaml.load(text, Loader=_Loader)  # noqa: S506 (a safe loader)
