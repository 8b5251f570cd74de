"""replay/lane_index.py LaneIndex: the (lane, ns) → node maps of the replay graph, held as
per-lane arrays. Synthetic entries (edge cases of a dict's contract: a later entry wins, a
missing key, shifting and windowing a rank's marks); the real graphs' maps are checked by
tests/test_replay_graph_build.py's digests."""

from __future__ import annotations

import numpy as np

from crossview.replay.lane_index import LaneIndex


def _ix() -> LaneIndex:
    x = LaneIndex()
    x.put("T 1/1", np.array([30, 10, 20]), np.array([3, 1, 2]))  # any order
    x.put("T 1/2", np.array([10]), np.array([7]))
    return x


def test_get_as_a_dict() -> None:
    x = _ix()
    assert x.get(("T 1/1", 20)) == 2
    assert x.get(("T 1/1", 30)) == 3
    assert x.get(("T 1/1", 25)) is None and x.get(("T 9/9", 10)) is None
    assert x.get(("T 1/1", 99), -1) == -1
    assert x.get(("T 1/1", 5)) is None and x.get(("T 1/1", 31)) is None  # past either end
    assert sorted(x.items()) == [(("T 1/1", 10), 1), (("T 1/1", 20), 2), (("T 1/1", 30), 3),
                                 (("T 1/2", 10), 7)]


def test_a_later_entry_wins() -> None:
    x = _ix()
    x.put("T 1/1", np.array([20, 40]), np.array([9, 4]))
    assert x.get(("T 1/1", 20)) == 9 and x.get(("T 1/1", 40)) == 4
    assert len(list(x.items())) == 5
    y = LaneIndex()
    y.put("L", np.array([5, 5]), np.array([1, 2]))  # the same time twice in one put
    assert list(y.items()) == [(("L", 5), 2)]


def test_shift_window_merge_copy() -> None:
    x = _ix()
    s = x.shifted("R3 ", 1000, 100)
    assert s.get(("R3 T 1/1", 1020)) == 102 and s.get(("T 1/1", 20)) is None
    joined = LaneIndex()
    joined.merge(x.shifted("R0 ", 0))
    joined.merge(s)
    w = joined.window(100, 200)  # rank 3's part, its nodes back to its own numbering
    assert sorted(w.items()) == [(("R3 T 1/1", 1010), 1), (("R3 T 1/1", 1020), 2),
                                 (("R3 T 1/1", 1030), 3), (("R3 T 1/2", 1010), 7)]
    c = x.copy()
    c.put("T 1/1", np.array([10]), np.array([0]))
    assert x.get(("T 1/1", 10)) == 1 and c.get(("T 1/1", 10)) == 0
