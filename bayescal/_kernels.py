"""Compiled kernels of the data path: interpolation (:mod:`bayescal._interp`) and binning
(:func:`bayescal.data.class_bin_counts`); imported on first use, so ``import bayescal`` stays light.

Module-level functions, so numba's disk cache finds them again in a new process (a kernel
defined inside a function that calls another compiled function is compiled anew each time).
"""

from __future__ import annotations

import math

from bayescal._numba import njit

__all__ = ["bin_rows", "interp", "interp_regular_rows", "search", "step"]


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
