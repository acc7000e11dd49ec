"""Fast lookups for prediction: interpolation on grids and searches among sorted knots.

Calibrators that tabulate their map or densities on a regular grid of the working scale
(KDE, DPM) predict by interpolating there (:func:`interp_regular`): the cell is one
multiplication away, so a compiled loop does it in one pass over the queries, about 10^8
points per second and curve. Calibrators whose map is piecewise on sorted knots (isotonic,
ENIR, ELiTE, BBQ) need the knot interval of each query; ``numpy.searchsorted`` and
``numpy.interp`` binary-search the whole knot array per query. :func:`search_sorted` and
:func:`interp_sorted` first cut the knots' range into about twice as many equal buckets as
knots (each bucket records its first knot), so a query's search runs over the few knots of
its bucket: same answers, several times faster on large queries. Numba is imported on first
use, not with ``bayescal``.
"""

from __future__ import annotations

import numpy as np

__all__ = ["interp_regular", "interp_sorted", "search_sorted", "step_sorted"]

_MIN_QUERIES_PER_KNOT = 4
"""Below this many queries per knot the bucket table costs more than it saves: use numpy."""


def _buckets(knots: np.ndarray) -> tuple[np.ndarray, float, float]:
    """First knot of each of about ``2 len(knots)`` equal buckets over the knots' range."""
    lo, hi = float(knots[0]), float(knots[-1])
    n_buckets = 2 * knots.size
    width = (hi - lo) / n_buckets
    inv_width = 1.0 / width if width > 0 and np.isfinite(1.0 / width) else 0.0
    starts = lo + width * np.arange(n_buckets + 1)
    first = np.searchsorted(knots, starts, side="left").astype(np.int64)
    first[-1] = knots.size
    return first, lo, inv_width


def _bucketed(points: np.ndarray, knots: np.ndarray) -> bool:
    return (
        points.size >= _MIN_QUERIES_PER_KNOT * knots.size
        and knots.size >= 2
        and bool(np.all(np.isfinite(knots[[0, -1]])))
    )


def search_sorted(knots: np.ndarray, points: np.ndarray, side: str = "left") -> np.ndarray:
    """``numpy.searchsorted(knots, points, side)`` for ascending ``knots`` and finite ``points``."""
    knots = np.ascontiguousarray(knots, dtype=np.float64)
    points = np.ascontiguousarray(points, dtype=np.float64)
    if not _bucketed(points, knots):
        return np.searchsorted(knots, points, side=side)
    first, lo, inv_width = _buckets(knots)
    out = np.empty(points.shape[0], dtype=np.int64)
    from bayescal._kernels import search

    search(points, knots, first, lo, inv_width, side == "right", out)
    return out


def interp_sorted(points: np.ndarray, knots: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``numpy.interp(points, knots, values)`` for strictly increasing ``knots`` and finite ``points``."""
    knots = np.ascontiguousarray(knots, dtype=np.float64)
    values = np.ascontiguousarray(values, dtype=np.float64)
    points = np.ascontiguousarray(points, dtype=np.float64)
    if not _bucketed(points, knots):
        return np.interp(points, knots, values)
    first, lo, inv_width = _buckets(knots)
    out = np.empty(points.shape[0])
    from bayescal._kernels import interp

    interp(points, knots, values, first, lo, inv_width, out)
    return out


def step_sorted(points: np.ndarray, knots: np.ndarray, between: np.ndarray, on_knot: np.ndarray) -> np.ndarray:
    """A step function with its own values on the knots: ``on_knot[j]`` where a point equals
    ``knots[j]``, else ``between[j]`` with ``j = searchsorted(knots, point)`` (``between`` has one
    more entry than ``knots``: the value below the first knot, between each pair, above the last)."""
    knots = np.ascontiguousarray(knots, dtype=np.float64)
    points = np.ascontiguousarray(points, dtype=np.float64)
    between = np.ascontiguousarray(between, dtype=np.float64)
    on_knot = np.ascontiguousarray(on_knot, dtype=np.float64)
    if not _bucketed(points, knots):
        j = np.searchsorted(knots, points, side="left")
        if knots.size == 0:
            return between[j]
        k = np.minimum(j, knots.size - 1)
        return np.where(knots[k] == points, on_knot[k], between[j])
    first, lo, inv_width = _buckets(knots)
    out = np.empty(points.shape[0])
    from bayescal._kernels import step

    step(points, knots, between, on_knot, first, lo, inv_width, out)
    return out


def interp_regular(points: np.ndarray, start: float, step: float, values: np.ndarray) -> np.ndarray:
    r"""Linear interpolation of ``values`` tabulated at ``start + k step``, ``k = 0 .. n-1``.

    .. math:: v(x) = v_j + (v_{j+1} - v_j)(u - j), \qquad u = (x - \mathrm{start}) / \mathrm{step},\ j = \lfloor u \rfloor,

    the same formula as ``numpy.interp(u, arange(n), v)``, with the end values beyond the grid.

    Parameters
    ----------
    points : ndarray of shape (m,)
        Query points (finite).
    start, step : float
        First grid point and spacing (``step > 0``).
    values : ndarray of shape (n,) or (r, n)
        One curve, or ``r`` curves on the same grid, ``n >= 2``.

    Returns
    -------
    ndarray of shape (m,) or (r, m)
    """
    points = np.ascontiguousarray(points, dtype=np.float64)
    table = np.ascontiguousarray(np.atleast_2d(values), dtype=np.float64)
    out = np.empty((table.shape[0], points.shape[0]))
    from bayescal._kernels import interp_regular_rows

    interp_regular_rows(points, float(start), float(step), table, out)
    return out[0] if np.ndim(values) == 1 else out
