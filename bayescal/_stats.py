"""Small weighted-statistics and numerical helpers shared by several modules."""

from __future__ import annotations

import numpy as np

__all__ = [
    "hessian_from_gradient",
    "weighted_mean_std",
    "weighted_quantile",
    "quantile_sketch",
    "sketch_quantile",
    "silverman_bandwidth",
    "robust_spread",
]


def weighted_mean_std(x: np.ndarray, w: np.ndarray | None = None) -> tuple[float, float]:
    """Weighted mean and (population) standard deviation."""
    x = np.asarray(x, dtype=np.float64)
    w = np.ones_like(x) if w is None else np.asarray(w, dtype=np.float64)
    mu = float(np.average(x, weights=w))
    return mu, float(np.sqrt(np.average((x - mu) ** 2, weights=w)))


def weighted_quantile(x: np.ndarray, q: np.ndarray | float, w: np.ndarray | None = None) -> np.ndarray:
    """Quantiles of a weighted sample (inverse of the weighted ECDF, midpoint convention).

    Rows of weight 0 are left out, as if absent (they would otherwise be points of the
    interpolated ECDF).
    """
    x = np.asarray(x, dtype=np.float64)
    w = np.ones_like(x) if w is None else np.asarray(w, dtype=np.float64)
    if np.any(w == 0):
        x, w = x[w != 0], w[w != 0]
    order = np.argsort(x, kind="stable")
    xs, ws = x[order], w[order]
    if ws.size and ws.max() > 1e300 / ws.size:  # the sum could overflow; the quantiles do not depend
        ws = ws / ws.max()  # on the weights' scale (only then rescaled: the same bits otherwise)
    cum = np.cumsum(ws) - 0.5 * ws
    cum /= ws.sum()
    return np.interp(q, cum, xs)


def quantile_sketch(x: np.ndarray, w: np.ndarray | None = None, size: int = 1000) -> tuple[np.ndarray, np.ndarray]:
    """A mergeable summary of a weighted sample, for approximate weighted quantiles of pooled samples.

    The sketch is a small weighted sample: the sample's :func:`weighted_quantile` at the
    ``size`` midpoints ``(i + 1/2) / size``, each carrying ``1/size`` of the sample's
    weight. A sample of at most ``size`` values is its own sketch (exact). Sketches of
    several samples (the partitions of a Dask dataframe, say) merge by pooling their points:
    see :func:`sketch_quantile`.

    Parameters
    ----------
    x : ndarray of shape (n,)
    w : ndarray of shape (n,), optional
        Non-negative weights (ones when ``None``).
    size : int, default 1000

    Returns
    -------
    points, weights : ndarray
        Empty when the sample is empty or has no weight.
    """
    x = np.asarray(x, dtype=np.float64)
    w = np.ones_like(x) if w is None else np.asarray(w, dtype=np.float64)
    if x.size == 0 or not w.max() > 0:  # non-negative weights: no weight at all
        return np.empty(0), np.empty(0)
    if np.any(w == 0):  # rows of no weight are not part of the sample
        x, w = x[w != 0], w[w != 0]
    if x.size <= size:
        return x.copy(), w.copy()
    with np.errstate(over="ignore"):  # a total beyond the largest float is inf; callers refuse such weights
        total = w.sum()
    return weighted_quantile(x, (np.arange(size) + 0.5) / size, w), np.full(size, total / size)


def sketch_quantile(sketches: list[tuple[np.ndarray, np.ndarray]], q: np.ndarray | float) -> np.ndarray:
    """Weighted quantiles ``q`` of the pooled samples behind ``sketches`` (from :func:`quantile_sketch`).

    Exact when every sketch is its own sample. Otherwise each sketch's weighted ECDF is
    within ``1/size`` of its sample's at every point (plus half the weight share of the
    sample's heaviest row), so the pooled one is too, and reading the quantile off the
    pooled sketch adds at most ``1/(2 size)``: the returned value's weighted rank in the
    pooled data is within about ``1.5 / size`` of ``q`` (0.15 % of the weight for
    ``size = 1000``), however many sketches are merged.
    """
    points = np.concatenate([p for p, _ in sketches])
    weights = np.concatenate([w for _, w in sketches])
    return weighted_quantile(points, q, weights)


def silverman_bandwidth(x: np.ndarray, w: np.ndarray | None = None, *, robust: bool = False) -> float:
    r"""Silverman's rule of thumb :math:`h = 1.06\,A\,N^{-1/5}`.

    :math:`A` is the standard deviation :math:`\hat\sigma`, or with ``robust=True``
    :math:`\min(\hat\sigma, \mathrm{IQR}/1.349)` (Silverman 1986, section 3.4.2; R's ``bw.nrd``),
    which a few far outlying values cannot inflate: a share :math:`\varepsilon` of values at
    distance :math:`D` adds about :math:`\varepsilon D^2` to :math:`\hat\sigma^2` but moves
    the quartiles by :math:`O(\varepsilon)` of the bulk's spread.

    Weights are frequencies (bayescal's convention: an integer weight equals repeated
    rows, and a :class:`~bayescal.data.ScoreSummary` count is a weight), so
    :math:`N = \sum w`. Returns 0 when the sample has no spread (callers decide what
    a degenerate class means for them); with ``robust=True`` and an IQR of 0 (half or more of
    the weight on one value) the standard deviation is used.

    References
    ----------
    Silverman, B. W. (1986). Density Estimation for Statistics and Data Analysis, section
    3.4.2. Chapman & Hall.
    """
    x = np.asarray(x, dtype=np.float64)
    w = np.ones_like(x) if w is None else np.asarray(w, dtype=np.float64)
    spread = robust_spread(x, w) if robust else (weighted_mean_std(x, w)[1] if x.max() > x.min() else 0.0)
    return float(1.06 * spread * w.sum() ** (-0.2))


def robust_spread(x: np.ndarray, w: np.ndarray | None = None) -> float:
    r"""The robust spread :math:`\min(\hat\sigma, \mathrm{IQR}/1.349)` of a weighted sample
    (:func:`silverman_bandwidth`'s :math:`A` with ``robust=True``): the standard deviation when the
    interquartile range is 0, and 0 when the sample has no spread. The quartiles are those of the
    distinct values with their pooled weights (unchanged by mirroring ``x``)."""
    x = np.asarray(x, dtype=np.float64)
    w = np.ones_like(x) if w is None else np.asarray(w, dtype=np.float64)
    _, spread = weighted_mean_std(x, w)
    if x.max() == x.min():
        return 0.0
    values, index = np.unique(x, return_inverse=True)
    q1, q3 = weighted_quantile(values, np.array([0.25, 0.75]), np.bincount(index, w))
    return min(spread, float(q3 - q1) / 1.349) if q3 > q1 else spread


def hessian_from_gradient(gradient, x: np.ndarray, step: float = 1e-6) -> np.ndarray:
    r"""Hessian of a function at ``x`` by forward differences of its exact gradient, symmetrised.

    :math:`H_{i\cdot} = (\nabla f(x + h e_i) - \nabla f(x)) / h`, then :math:`(H + H^T) / 2`;
    one gradient evaluation per coordinate plus one.

    Parameters
    ----------
    gradient : callable
        :math:`x \mapsto \nabla f(x)`, an array of the shape of ``x``.
    x : ndarray of shape (d,)
        The point.
    step : float, default 1e-6
        The difference step :math:`h`.

    Returns
    -------
    ndarray of shape (d, d)
    """
    x = np.asarray(x, dtype=np.float64)
    g0 = np.asarray(gradient(x), dtype=np.float64)
    H = np.array([(np.asarray(gradient(x + step * e), dtype=np.float64) - g0) / step for e in np.eye(x.size)])
    return 0.5 * (H + H.T)
