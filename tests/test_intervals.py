"""``mfu_toolkit.intervals``: each operation against a hand count, and against a brute-force count on a fine grid.

The brute force lays random intervals on integer endpoints and counts, cell by cell of width 1, which
cells a set covers: an independent way to the same lengths, exact in floating point.
"""

from __future__ import annotations

import numpy as np
import pytest

from mfu_toolkit import intervals as iv


def test_union_by_hand():
    # [0, 2] and [1, 3] overlap, [3, 4] touches (joined), [5, 5] is empty, [6, 7] stands alone
    us, ue = iv.union(np.array([1.0, 0.0, 3.0, 5.0, 6.0]), np.array([3.0, 2.0, 4.0, 5.0, 7.0]))
    assert us.tolist() == [0.0, 6.0] and ue.tolist() == [4.0, 7.0]
    assert iv.measure((us, ue)) == 5.0
    # a gap of at most 2 joins [0, 4] and [6, 7]
    assert [a.tolist() for a in iv.union(np.array([0.0, 6.0]), np.array([4.0, 7.0]), gap=2.0)] == [[0.0], [7.0]]
    assert [len(a) for a in iv.union(np.array([]), np.array([]))] == [0, 0]


def test_coverage_by_hand():
    u = (np.array([0.0, 6.0]), np.array([4.0, 7.0]))
    assert iv.covered_before(u, np.array([-1.0, 0.0, 2.0, 5.0, 6.5, 9.0])).tolist() == [0.0, 0.0, 2.0, 4.0, 4.5, 5.0]
    assert iv.covered_within(u, np.array([3.0, 4.0]), np.array([6.5, 6.0])).tolist() == [1.5, 0.0]


def test_intersection_difference_and_pieces_by_hand():
    a = (np.array([0.0, 6.0]), np.array([4.0, 7.0]))
    b = (np.array([3.0]), np.array([6.5]))
    assert [x.tolist() for x in iv.intersection(a, b)] == [[3.0, 6.0], [4.0, 6.5]]
    assert [x.tolist() for x in iv.difference(a, b)] == [[0.0, 6.5], [3.0, 7.0]]
    # sorted by start: [0, 4] takes 0-4, [1, 3] lies inside it (empty), [2, 6] takes 4-6
    s, e = iv.exclusive_pieces(np.array([0.0, 1.0, 2.0]), np.array([4.0, 3.0, 6.0]))
    assert (e - s).tolist() == [4.0, 0.0, 2.0]


def _cells(starts, ends, n):
    mask = np.zeros(n, dtype=bool)
    for s, e in zip(starts, ends, strict=True):
        mask[int(s):int(e)] = True
    return mask


@pytest.mark.parametrize("seed", range(40))
def test_every_operation_agrees_with_counting_cells(seed):
    rng = np.random.default_rng(seed)
    n = 60

    def random_set():
        k = int(rng.integers(0, 12))
        s = rng.integers(0, n, k).astype(float)
        return s, np.minimum(s + rng.integers(0, 15, k), n).astype(float)

    (s1, e1), (s2, e2) = random_set(), random_set()
    c1, c2 = _cells(s1, e1, n), _cells(s2, e2, n)
    u1, u2 = iv.union(s1, e1), iv.union(s2, e2)
    assert (np.diff(u1[0]) > 0).all() and (u1[1] > u1[0]).all() and (u1[0][1:] > u1[1][:-1]).all()
    assert iv.measure(u1) == c1.sum()
    assert np.array_equal(_cells(*u1, n), c1)
    assert np.array_equal(_cells(*iv.intersection(u1, u2), n), c1 & c2)
    assert np.array_equal(_cells(*iv.difference(u1, u2), n), c1 & ~c2)
    a = rng.integers(0, n, 20).astype(float)
    b = np.minimum(a + rng.integers(0, 20, 20), n).astype(float)
    want = [c1[int(x):int(y)].sum() for x, y in zip(a, b, strict=True)]
    assert iv.covered_within(u1, a, b).tolist() == want
    o = np.argsort(s1, kind="stable")
    ps, pe = iv.exclusive_pieces(s1[o], e1[o])
    assert (pe - ps).sum() == c1.sum() and (pe >= ps).all()


def test_the_old_gpu_time_names_warn_and_agree():
    from mfu_toolkit.io import gpu_time

    s, e = np.array([0.0, 1.0, 5.0]), np.array([2.0, 3.0, 6.0])
    with pytest.warns(DeprecationWarning, match="intervals.measure"):
        assert gpu_time.union_length(s, e) == 4.0
    with pytest.warns(DeprecationWarning, match="intervals.covered_before"):
        assert gpu_time.covered(*iv.union(s, e), np.array([4.0, 5.5])).tolist() == [3.0, 3.5]
    with pytest.raises(AttributeError):
        gpu_time.no_such_name  # noqa: B018
