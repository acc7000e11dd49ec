"""Small weighted-statistics helpers shared by several calibrators."""

from __future__ import annotations

import numpy as np

__all__ = ["weighted_mean_std", "weighted_quantile", "silverman_bandwidth"]


def weighted_mean_std(x: np.ndarray, w: np.ndarray | None = None) -> tuple[float, float]:
    """Weighted mean and (population) standard deviation."""
    x = np.asarray(x, dtype=np.float64)
    w = np.ones_like(x) if w is None else np.asarray(w, dtype=np.float64)
    mu = float(np.average(x, weights=w))
    return mu, float(np.sqrt(np.average((x - mu) ** 2, weights=w)))


def weighted_quantile(x: np.ndarray, q: np.ndarray | float, w: np.ndarray | None = None) -> np.ndarray:
    """Quantiles of a weighted sample (inverse of the weighted ECDF, midpoint convention)."""
    x = np.asarray(x, dtype=np.float64)
    w = np.ones_like(x) if w is None else np.asarray(w, dtype=np.float64)
    order = np.argsort(x, kind="stable")
    xs, ws = x[order], w[order]
    cum = np.cumsum(ws) - 0.5 * ws
    cum /= ws.sum()
    return np.interp(q, cum, xs)


def silverman_bandwidth(x: np.ndarray, w: np.ndarray | None = None) -> float:
    r"""Silverman's rule of thumb :math:`h = 1.06\,\hat\sigma\,N^{-1/5}`.

    Weights are frequencies (bayescal's convention: an integer weight equals repeated
    rows, and a :class:`~bayescal.data.ScoreSummary` count is a weight), so
    :math:`N = \sum w`. Returns 0 when the sample has no spread (callers decide what
    a degenerate class means for them).
    """
    x = np.asarray(x, dtype=np.float64)
    w = np.ones_like(x) if w is None else np.asarray(w, dtype=np.float64)
    _, sd = weighted_mean_std(x, w)
    if x.max() == x.min():
        return 0.0
    return float(1.06 * sd * w.sum() ** (-0.2))
