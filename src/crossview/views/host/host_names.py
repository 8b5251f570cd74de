"""Whether any host event of some captures has a name containing one of a few markers (a
backward pass: `_backward`, `autograd::engine::…`: knowledge/op_roofline.yaml), tested on
the distinct names, not on every event."""

from __future__ import annotations

from crossview.store.host_calls import NO_LIMIT
from crossview.store.store import Store


def any_contains(store: Store, artifacts: list[int], markers: list[str]) -> bool:
    """True when a host event (every kind, the whole capture: not only the filter's slice)
    of `artifacts` has a name containing one of `markers`."""
    return bool(store.sql(
        # the markers tested on distinct names (the LIMIT: no push into the scan)
        "SELECT count(*) FROM (SELECT DISTINCT name FROM host_ops WHERE artifact_id IN"
        f" (SELECT unnest($a)) LIMIT {NO_LIMIT})"
        " WHERE list_has_any([m FOR m IN $m IF contains(name, m)], $m)",
        {"a": artifacts, "m": markers}).fetchall()[0][0])
