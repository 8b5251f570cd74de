"""The user's own frame above given host ops: where a fix for those ops goes.

Walks the interned call path (`frames` table: parent_node chain) of the longest matching op
up to the nearest frame in the user's own code (frames.yaml: not library, cache, engine or
standard-library code)."""

from __future__ import annotations

from crossview.knowledge import frames
from crossview.views.views import Views


def user_frame_above(v: Views, names: list[str]) -> str | None:
    """Nearest user frame above the longest op (in scope) with one of these names."""
    if not names:
        return None
    store = v.store
    row = store.sql(
        "SELECT node_id FROM f_host WHERE name IN (SELECT unnest($n)) AND node_id IS NOT NULL"
        " ORDER BY dur_ns DESC LIMIT 1", {"n": names},
    ).fetchall()
    nid = row[0][0] if row else None
    seen = 0
    while nid is not None and seen < 10_000:  # a path is never this deep; guards a cycle
        seen += 1
        got = store.sql("SELECT parent_node, name FROM frames WHERE node_id = $n",
                        {"n": nid}).fetchall()
        if not got:
            return None
        parent, name = got[0]
        if frames.is_user_frame(str(name)):
            return str(name)
        nid = parent
    return None
