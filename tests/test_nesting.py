# Synthetic edge cases (hand-made arrays and seeded random interval forests) for host-event
# nesting: no public sample in ../shared/data isolates these shapes, so every input is built here.
"""Unit tests of ``crossview.sources.kineto.nesting``: ``nest`` and ``intern_paths``.

``nest(thread, start, dur)`` gives, per event (in input order), its depth, the input index of
its parent (−1 for a root) and its self time (dur − children's dur). Nesting is by time
containment within one thread; touching intervals (end == next start) are siblings.
"""

from __future__ import annotations

import numpy as np
import pytest

from crossview.sources.kineto.nesting import intern_paths, nest


def arr(*xs: int) -> np.ndarray:
    return np.array(xs, dtype=np.int64)


def run(thread: list[int], start: list[int], dur: list[int]) -> tuple[list, list, list]:
    r = nest(arr(*thread), arr(*start), arr(*dur))
    return r.depth.tolist(), r.parent.tolist(), r.self_ns.tolist()


# --------------------------------------------------------------------------- nest: hand-made


def test_empty() -> None:
    r = nest(arr(), arr(), arr())
    assert len(r.depth) == len(r.parent) == len(r.self_ns) == 0


def test_single_event_is_a_root() -> None:
    assert run([1], [100], [50]) == ([0], [-1], [50])


def test_nested_chain_and_self_time() -> None:
    # A [0,100) ⊃ B [10,60) ⊃ C [20,30)
    depth, parent, self_ns = run([1, 1, 1], [0, 10, 20], [100, 50, 10])
    assert depth == [0, 1, 2]
    assert parent == [-1, 0, 1]
    assert self_ns == [100 - 50, 50 - 10, 10]


def test_siblings_under_one_parent() -> None:
    # P [0,100) with children [10,20) and [30,50): self = 100 − 10 − 20
    depth, parent, self_ns = run([1, 1, 1], [0, 10, 30], [100, 10, 20])
    assert depth == [0, 1, 1]
    assert parent == [-1, 0, 0]
    assert self_ns == [70, 10, 20]


def test_touching_intervals_are_siblings_not_nested() -> None:
    # [0,10) and [10,20): end == next start → both roots
    depth, parent, self_ns = run([1, 1], [0, 10], [10, 10])
    assert depth == [0, 0]
    assert parent == [-1, -1]
    assert self_ns == [10, 10]


def test_touching_children_inside_a_parent() -> None:
    # P [0,20) with [0,10) and [10,20): both children of P (not of each other)
    depth, parent, self_ns = run([1, 1, 1], [0, 0, 10], [20, 10, 10])
    assert depth == [0, 1, 1]
    assert parent == [-1, 0, 0]
    assert self_ns == [0, 10, 10]


def test_child_sharing_start_with_parent() -> None:
    # same start: the longer one is the parent, whatever the input order
    depth, parent, _ = run([1, 1], [5, 5], [3, 10])
    assert depth == [1, 0]
    assert parent == [1, -1]


def test_child_ending_with_parent() -> None:
    depth, parent, self_ns = run([1, 1], [0, 5], [10, 5])
    assert depth == [0, 1]
    assert parent == [-1, 0]
    assert self_ns == [5, 5]


def test_zero_duration_events() -> None:
    # P [0,10) holds a zero-length event at 0 (its start) and one at 4; a zero-length event at
    # P's end (10) and one later (30) are roots; a positive event after them is a root too.
    thread = [1, 1, 1, 1, 1, 1]
    start = [0, 0, 4, 10, 30, 30]
    dur = [10, 0, 0, 0, 0, 5]
    depth, parent, self_ns = run(thread, start, dur)
    assert parent == [-1, 0, 0, -1, 5, -1]
    assert depth == [0, 1, 1, 0, 1, 0]
    assert self_ns == [10, 0, 0, 0, 0, 5]


def test_zero_duration_event_is_never_open_for_a_later_event() -> None:
    # Z [5,5] then A [5,8) is impossible in sorted order (A, longer, sorts first); Z [5,5]
    # then B [6,9): B is a root, not a child of Z.
    depth, parent, _ = run([1, 1], [5, 6], [0, 3])
    assert depth == [0, 0]
    assert parent == [-1, -1]


def test_two_zero_duration_events_at_the_same_time_are_siblings() -> None:
    depth, parent, _ = run([1, 1], [7, 7], [0, 0])
    assert depth == [0, 0]
    assert parent == [-1, -1]


def test_two_threads_do_not_nest_into_each_other() -> None:
    # identical times on threads 1 and 2: each thread has its own root and child
    thread = [1, 1, 2, 2]
    start = [0, 10, 0, 10]
    dur = [100, 10, 100, 10]
    depth, parent, self_ns = run(thread, start, dur)
    assert depth == [0, 1, 0, 1]
    assert parent == [-1, 0, -1, 2]
    assert self_ns == [90, 10, 90, 10]


def test_thread_boundary_with_open_event() -> None:
    # thread 1's long event [0,1000) must not swallow thread 2's [5,6)
    depth, parent, _ = run([1, 2], [0, 5], [1000, 1])
    assert depth == [0, 0]
    assert parent == [-1, -1]


def test_unsorted_input_is_sorted_by_nest_itself() -> None:
    # the chain and siblings of the tests above, shuffled and with threads interleaved;
    # results come back in input order, parents as input indices
    thread = [2, 1, 1, 2, 1, 1]
    start = [10, 30, 10, 0, 0, 12]
    dur = [10, 20, 10, 100, 100, 3]
    depth, parent, self_ns = run(thread, start, dur)
    # thread 1: idx4 [0,100) ⊃ idx2 [10,20) ⊃ idx5 [12,15); idx1 [30,50) child of idx4
    # thread 2: idx3 [0,100) ⊃ idx0 [10,20)
    assert parent == [3, 4, 4, -1, -1, 2]
    assert depth == [1, 1, 1, 0, 0, 2]
    assert self_ns == [10, 20, 7, 90, 70, 3]


def test_large_absolute_timestamps() -> None:
    # epoch-like ns values (≈ 1.7e18) keep exact results
    t0 = 1_700_000_000_000_000_000
    depth, parent, self_ns = run([1, 1, 1], [t0, t0 + 1, t0 + 2], [10, 5, 1])
    assert depth == [0, 1, 2]
    assert parent == [-1, 0, 1]
    assert self_ns == [5, 4, 1]


# --------------------------------------------------------------------------- nest: property


def reference_nest(thread: np.ndarray, start: np.ndarray, dur: np.ndarray
                   ) -> tuple[list[int], list[int], list[int]]:
    """Plain stack walk: sort by (thread, start, −dur), pop every event that ended by the
    current start (touching and zero-length events close), the stack top is the parent."""
    n = len(start)
    order = sorted(range(n), key=lambda i: (int(thread[i]), int(start[i]), -int(dur[i]), i))
    depth = [0] * n
    parent = [-1] * n
    child_sum = [0] * n
    stack: list[int] = []
    cur_thread: int | None = None
    for i in order:
        if thread[i] != cur_thread:
            stack = []
            cur_thread = int(thread[i])
        while stack and start[stack[-1]] + dur[stack[-1]] <= start[i]:
            stack.pop()
        if stack:
            parent[i] = stack[-1]
            depth[i] = len(stack)
            child_sum[stack[-1]] += int(dur[i])
        stack.append(i)
    self_ns = [max(int(dur[i]) - child_sum[i], 0) for i in range(n)]
    return depth, parent, self_ns


def random_forest(rng: np.random.Generator, threads: list[int], base: int
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Properly nested intervals per thread: children lie inside their parent and are
    strictly shorter; siblings may touch; zero-length leaves allowed (several may share a ts)."""
    th: list[int] = []
    st: list[int] = []
    du: list[int] = []

    def fill(t: int, lo: int, hi: int, level: int, zero_seen: set[int]) -> None:
        if hi <= lo or level > 6:
            return
        k = int(rng.integers(5, 40)) if level == 0 else int(rng.integers(0, 5 if level < 5 else 2))
        if k == 0:
            return
        cuts = np.sort(rng.integers(lo, hi + 1, size=2 * k))
        for j in range(k):
            a, b = int(cuts[2 * j]), int(cuts[2 * j + 1])
            if level > 0 and b - a >= hi - lo:
                b -= 1  # strictly shorter than the parent
                if b < a:
                    continue
            if a == b:
                zero_seen.add(a)  # several 0-length events at one ts are allowed (siblings)
            th.append(t)
            st.append(base + a)
            du.append(b - a)
            fill(t, a, b, level + 1, zero_seen)

    for t in threads:
        fill(t, 0, int(rng.integers(500, 50_000)), 0, set())
    return (np.array(th, dtype=np.int64), np.array(st, dtype=np.int64),
            np.array(du, dtype=np.int64))


@pytest.mark.parametrize("seed", range(12))
def test_nest_matches_stack_walk_on_random_forests(seed: int) -> None:
    rng = np.random.default_rng(1234 + seed)
    threads = [int(x) for x in rng.choice(np.arange(1, 50), size=int(rng.integers(1, 5)),
                                          replace=False)]
    thread, start, dur = random_forest(rng, threads, base=1_700_000_000_000_000 + seed)
    if len(start) == 0:
        pytest.skip("empty forest")
    want = reference_nest(thread, start, dur)
    # sorted input (the reader's order) and a shuffled copy must both match the reference
    order = np.lexsort((-dur, start, thread))
    got = nest(thread[order], start[order], dur[order])
    back = np.empty(len(order), dtype=np.int64)
    back[order] = np.arange(len(order))
    par = np.where(got.parent >= 0, order[np.maximum(got.parent, 0)], -1)
    assert got.depth[back].tolist() == want[0]
    assert par[back].tolist() == want[1]
    assert got.self_ns[back].tolist() == want[2]

    perm = rng.permutation(len(start))
    got2 = nest(thread[perm], start[perm], dur[perm])
    assert got2.depth.tolist() == [want[0][i] for i in perm]
    inv = np.empty(len(perm), dtype=np.int64)
    inv[perm] = np.arange(len(perm))
    assert got2.parent.tolist() == [int(inv[want[1][i]]) if want[1][i] >= 0 else -1
                                    for i in perm]
    assert got2.self_ns.tolist() == [want[2][i] for i in perm]


def test_random_forests_are_not_trivial() -> None:
    # the generator reaches depth ≥ 3, zero-length and touching events (else the property
    # test above would prove little)
    depths, zeros, touching = 0, 0, 0
    for seed in range(12):
        rng = np.random.default_rng(1234 + seed)
        threads = [int(x) for x in rng.choice(np.arange(1, 50), size=int(rng.integers(1, 5)),
                                              replace=False)]
        thread, start, dur = random_forest(rng, threads, base=0)
        if len(start) == 0:
            continue
        d, _, _ = reference_nest(thread, start, dur)
        depths = max(depths, max(d))
        zeros += int((dur == 0).sum())
        pos = dur > 0
        ends = set(zip(thread[pos].tolist(), (start + dur)[pos].tolist(), strict=True))
        touching += sum((t, s) in ends for t, s in zip(thread.tolist(), start.tolist(),
                                                         strict=True))
    assert depths >= 3 and zeros > 0 and touching > 0


# --------------------------------------------------------------------------- intern_paths


def test_intern_paths_shares_nodes_for_equal_label_paths() -> None:
    # two root events labelled A, each with a child B (and one extra B under the first A):
    # one node for A, one for A/B
    depth = np.array([0, 1, 1, 0, 1], dtype=np.int32)
    parent = arr(-1, 0, 0, -1, 3)
    label = arr(0, 1, 1, 0, 1)
    node, node_parent, node_label = intern_paths(depth, parent, label)
    assert node.tolist() == [0, 1, 1, 0, 1]
    assert node_parent.tolist() == [-1, 0]
    assert node_label.tolist() == [0, 1]


def test_intern_paths_distinguishes_parents() -> None:
    # C under A and C under B are different nodes; same label at different depth too
    # events: A(0) > C(1); B(2) > C(3) > A(4)
    depth = np.array([0, 1, 0, 1, 2], dtype=np.int32)
    parent = arr(-1, 0, -1, 2, 3)
    label = arr(0, 2, 1, 2, 0)  # A=0, B=1, C=2
    node, node_parent, node_label = intern_paths(depth, parent, label, first_node=100)
    assert len(set(node.tolist())) == 5
    assert min(node.tolist()) == 100
    assert len(node_parent) == len(node_label) == 5
    idx = {int(n): i for i, n in enumerate(node.tolist())}  # node id → an event index
    for ev, n in enumerate(node.tolist()):
        k = n - 100
        assert node_label[k] == label[ev]
        want_parent = -1 if parent[ev] < 0 else int(node[parent[ev]])
        assert node_parent[k] == want_parent
    assert idx  # every event got a node


def test_intern_paths_root_parent_prefix() -> None:
    # root events hang under given prefix nodes (legacy "Call stack" chains): same label under
    # different prefixes → different nodes; −1 → a true root
    depth = np.array([0, 0, 0, 1], dtype=np.int32)
    parent = arr(-1, -1, -1, 0)
    label = arr(0, 0, 0, 1)
    root_parent = arr(7, 8, -1, -1)
    node, node_parent, node_label = intern_paths(depth, parent, label, root_parent,
                                                 first_node=10)
    assert len(set(node[:3].tolist())) == 3
    got = {int(node[i]): int(node_parent[int(node[i]) - 10]) for i in range(3)}
    assert sorted(got.values()) == [-1, 7, 8]
    assert got[int(node[0])] == 7 and got[int(node[1])] == 8 and got[int(node[2])] == -1
    assert node_parent[int(node[3]) - 10] == node[0]
    assert node_label.tolist().count(0) == 3


def test_intern_paths_empty() -> None:
    node, node_parent, node_label = intern_paths(np.zeros(0, dtype=np.int32), arr(), arr())
    assert len(node) == len(node_parent) == len(node_label) == 0


def test_nest_then_intern_end_to_end() -> None:
    # unsorted events of two threads, labels per event: the same call path on both threads
    # interns to the same nodes
    thread = arr(2, 1, 2, 1)
    start = arr(5, 0, 0, 5)
    dur = arr(1, 10, 10, 1)
    label = arr(1, 0, 0, 1)
    r = nest(thread, start, dur)
    node, node_parent, node_label = intern_paths(r.depth, r.parent, label)
    assert node[1] == node[2] and node[0] == node[3] and node[0] != node[1]
    assert node_parent.tolist() == [-1, int(node[1])]
    assert node_label.tolist() == [0, 1]
