"""Compiled kernels of the data path: interpolation (:mod:`bayescal._interp`), binning
(:func:`bayescal.data.class_bin_counts`) and the monotone sweep of
:func:`bayescal.metrics.ece_sweep`; imported on first use, so ``import bayescal`` stays light.

Module-level functions, so numba's disk cache finds them again in a new process (a kernel
defined inside a function that calls another compiled function is compiled anew each time).
"""

from __future__ import annotations

import math

import numpy as np

from bayescal._numba import njit

__all__ = ["bin_rows", "interp", "interp_regular_rows", "largest_monotone_bins", "search", "step"]


@njit
def interp_regular_rows(points, start, step, values, out):  # pragma: no cover - compiled
    """Rows of ``values`` (tabulated on the grid start + step * j) interpolated linearly at ``points``."""
    last = values.shape[1] - 1
    for r in range(values.shape[0]):  # curve by curve: contiguous reads and writes
        row = values[r]
        for i in range(points.shape[0]):
            pos = (points[i] - start) / step
            if pos <= 0.0:
                out[r, i] = row[0]
            elif pos >= last:
                out[r, i] = row[last]
            else:
                j = int(pos)
                out[r, i] = row[j] + (row[j + 1] - row[j]) * (pos - j)


@njit(inline="always")
def locate(x, knots, first, lo, inv_width, right):  # pragma: no cover - compiled
    """np.searchsorted(knots, x, side) via the bucket of x: binary search inside it."""
    n_buckets = first.shape[0] - 1
    pos = (x - lo) * inv_width
    b = 0 if not pos > 0.0 else (n_buckets - 1 if pos >= n_buckets else int(pos))
    a, z = first[b], first[b + 1]
    # rounding can put x one bucket off: widen to the neighbours' knots then
    if a > 0 and (knots[a - 1] >= x if not right else knots[a - 1] > x):
        a = 0
    if z < knots.shape[0] and (knots[z] < x if not right else knots[z] <= x):
        z = knots.shape[0]
    while a < z:  # first index in [a, z) whose knot is >= x (left) or > x (right)
        m = (a + z) >> 1
        if knots[m] < x or (right and knots[m] == x):
            a = m + 1
        else:
            z = m
    return a


@njit
def search(points, knots, first, lo, inv_width, right, out):  # pragma: no cover - compiled
    for i in range(points.shape[0]):
        out[i] = locate(points[i], knots, first, lo, inv_width, right)


@njit
def interp(points, knots, values, first, lo, inv_width, out):  # pragma: no cover - compiled
    last = knots.shape[0] - 1
    for i in range(points.shape[0]):
        x = points[i]
        j = locate(x, knots, first, lo, inv_width, True) - 1
        if j < 0:
            out[i] = values[0]
        elif j >= last:
            out[i] = values[last]
        else:  # numpy.interp's formula
            slope = (values[j + 1] - values[j]) / (knots[j + 1] - knots[j])
            out[i] = slope * (x - knots[j]) + values[j]


@njit
def step(points, knots, between, on_knot, first, lo, inv_width, out):  # pragma: no cover - compiled
    n = knots.shape[0]
    for i in range(points.shape[0]):
        x = points[i]
        j = locate(x, knots, first, lo, inv_width, False)
        out[i] = on_knot[j] if j < n and knots[j] == x else between[j]


@njit
def bin_rows(t, y, w, skip, centre, inv_scale, lo, width, n_bins, counts, weights):  # pragma: no cover - compiled
    """Add each row not marked in ``skip`` (empty: none) to ``counts[y, j]`` and its weight to
    ``weights[y, j]``, ``j = int((u - lo) / width)`` clipped to the bins, with ``u = t`` when
    ``inv_scale`` is 0 and ``u = asinh((t - centre) * inv_scale)`` otherwise: one pass, no temporaries."""
    check = skip.shape[0] > 0
    last = n_bins - 1
    for i in range(t.shape[0]):
        if check and skip[i]:
            continue
        u = t[i] if inv_scale == 0.0 else math.asinh((t[i] - centre) * inv_scale)
        j = int((u - lo) / width)
        if j < 0:
            j = 0
        elif j > last:
            j = last
        c = y[i]
        counts[c, j] += 1
        weights[c, j] += w[i]


_EPS = 2.220446049250313e-16
"""The float64 machine epsilon (a global, which numba compiles in as a constant)."""


@njit(inline="always")
def _first_reaching(values, scale, target, lo):  # pragma: no cover - compiled
    """First index ``i >= lo`` of the non-decreasing ``values`` with ``values[i] * scale >= target``
    (``values.size`` if none): ``np.searchsorted(values * scale, target)`` without forming the
    product array. The comparison is monotone in the value, so the search is exact; it gallops
    from ``lo`` (steps 1, 2, 4, ...) before bisecting, so an answer d places on costs O(log d)."""
    n = values.shape[0]
    step = 1
    hi = lo
    while hi < n and values[hi] * scale < target:
        lo = hi + 1
        hi = lo + step
        step *= 2
    hi = min(hi, n)
    while lo < hi:
        mid = (lo + hi) // 2
        if values[mid] * scale >= target:
            hi = mid
        else:
            lo = mid + 1
    return lo


@njit
def largest_monotone_bins(
    p, cumulative, total, slack, positive, negative, rounding, quantile
):  # pragma: no cover - compiled
    """The monotone sweep's :math:`b^*` (Roelofs et al.): the number of bins before the first
    whose fractions of positives decrease over its non-empty bins (``p.size`` if none does).

    ``p`` holds the sorted predictions; ``cumulative``, ``total`` and ``slack`` are the running
    sums of their weights, its last value and the allowance for rounding of
    :func:`bayescal.metrics._running_weight`; ``positive`` / ``negative`` are the running sums of the
    positives' / negatives' weights (:func:`bayescal.metrics._running_sum`) with a leading 0, and
    ``rounding`` twice the sum of their error bounds. The bin ends are those of
    :func:`bayescal.metrics._bin_ends`, by the same comparisons: with ``quantile``, bin k ends
    after the run of predictions equal to the one where ``cumulative * b`` first reaches
    ``k * total - b * slack``; otherwise sample i is in bin k where ``k / b <= p_i < (k + 1) / b``
    (the edges as floats; the last bin closed).

    A bin's fraction is its positives' weight over its weight, both as differences of running
    sums (a bin of one class has the other's weight exactly 0). Each is within
    ``rounding / weight + 2 * eps`` of the exact fraction, and a bin breaks monotonicity only if
    its fraction is below the previous one by more than their two allowances: a decrease exact
    arithmetic would find (ties such as 1/2 and 1/2 from weights that do not add up exactly stay
    ties). When the sums are exact (``rounding`` 0, as for integer weights) the allowance is 0:
    equal fractions are then the same float, and rounding the division keeps their order."""
    n = p.shape[0]
    for b in range(2, n + 1):
        start = 0
        cut = 0
        previous = -1.0
        previous_allowance = 0.0
        for k in range(1, b + 1):
            if k == b:
                end = n
            elif quantile:
                cut = _first_reaching(cumulative, b, k * total - b * slack, cut)
                i = min(cut, n - 1)  # the bin ends after the run of predictions equal to p[i]
                end = _first_reaching(p, 1.0, np.nextafter(p[i], np.inf), i + 1)
            else:
                end = _first_reaching(p, 1.0, k / b, start)  # the edge k/b as a float, as ece's bins
            if end < start:
                end = start
            pos = positive[end] - positive[start]
            mass = pos + (negative[end] - negative[start])
            if mass > 0.0:
                fraction = pos / mass
                allowance = 0.0 if rounding == 0.0 else rounding / mass + 2.0 * _EPS
                if fraction + allowance < previous - previous_allowance:
                    return b - 1
                previous = fraction
                previous_allowance = allowance
            start = end
    return n
