r"""Kernel-density-estimate calibration (Naeini, Cooper & Hauskrecht 2014).

Bayes' rule with one kernel density estimate per class:

.. math::

    P(y=1 \mid x) = \frac{\pi\, \hat f_1(x)}{\pi\, \hat f_1(x) + (1-\pi)\, \hat f_0(x)},
    \qquad
    \hat f_c(x) = \frac{1}{W_c} \sum_{i:\, y_i = c} w_i\, K_{h_c}(x - x_i),

with :math:`W_c = \sum_{i: y_i = c} w_i`, :math:`\pi = W_1 / (W_0 + W_1)` and
:math:`K_h(u) = K(u/h)/h`. With one bandwidth ``h`` for both classes the factors
:math:`W_c` cancel and the map is the Nadaraya-Watson estimator of :math:`E[y \mid x]`:

.. math::

    P(y=1 \mid x) = \frac{\sum_i w_i\, y_i\, K_h(x - x_i)}{\sum_i w_i\, K_h(x - x_i)}.

Everything costs :math:`O((N + M)\log N)` for ``N`` training and ``M`` query scores, never
:math:`O(NM)`:

* boxcar and Epanechnikov kernels are evaluated **exactly** from prefix sums over the sorted
  scores: the kernel is a polynomial in :math:`x - x_i` on the window :math:`|x - x_i| \le h`,
  so window sums of :math:`w_i`, :math:`w_i u_i`, :math:`w_i u_i^2` (with
  :math:`u_i = (x_i - m)/h` about an anchor ``m``, accumulated in long double precision)
  give it (Fan & Marron 1994). The anchor is local: the scores split into clusters at gaps
  wider than :math:`2h`, which no window crosses, and each cluster is measured from its own
  midrange, so the Epanechnikov sum carries a round-off of about
  :math:`\epsilon (D/h)^2` of the window's weight, ``D`` the distance to the cluster's
  anchor and :math:`\epsilon` the long double's precision (:math:`10^{-19}` on x86):
  below :math:`10^{-11}` for the Silverman bandwidths of any realistic data
  (:math:`D/h < 10^4`), and 0 for a bandwidth far below the scores' spacing;
* the Gaussian kernel is evaluated on a fine grid by **linear binning** and FFT
  convolution (Wand 1994), then linearly interpolated, each class on a grid of its own
  whose step follows the class's bandwidth. A grid covers only the stretches where the
  class's scores are: gaps wider than the kernel's reach are collapsed, and runs of fewer
  than 64 distinct scores beyond such gaps (far outliers) are summed exactly, so a few
  scores far out never coarsen the grid in the bulk; see :func:`class_density` for the
  approximation error.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import xarray as xr
from scipy.signal import fftconvolve
from scipy.special import expit, logit
from sklearn.utils.validation import check_is_fitted

from bayescal import _schema as schema
from bayescal._interp import interp_regular
from bayescal._stats import silverman_bandwidth
from bayescal._typing import ArrayLike
from bayescal._validation import check_sample_weight, check_scores
from bayescal.base import Calibrator, ClassConditional
from bayescal.data import ScoreData, to_working

__all__ = ["KDECalibrator", "class_density", "KERNELS", "DENSITY_FLOOR"]

KERNELS = ("gaussian", "boxcar", "epanechnikov")
"""Kernel names; ``h`` is the standard deviation of the Gaussian and the half-width of the others."""

DENSITY_FLOOR = 1e-9
"""Each class density is floored at this fraction of a uniform density over the data range."""

_GAUSS_TRUNCATION = 8.0  # the Gaussian kernel is cut at 8 h: exp(-32) ~ 1e-14 of its peak
_GRID_PER_BANDWIDTH = 128
_MIN_GRID = 2**10
_MAX_GRID = 2**20
_MIN_GRID_RUN = 64
"""Runs of fewer distinct scores (with gaps beyond the kernel's reach around them) are summed exactly."""
_EXACT_CHUNK = 2**16
"""Query points per pass of the exact sums (at most 63 terms each)."""


# ---- parameter checks ------------------------------------------------------------------
def _check_kernel(kernel: Any) -> str:
    if kernel not in KERNELS:
        raise ValueError(f"kernel={kernel!r} is not one of {KERNELS}: pick one of those names.")
    return kernel


def _check_bandwidth(bandwidth: Any, allowed: tuple[str, ...]) -> float | str:
    if isinstance(bandwidth, str):
        if bandwidth not in allowed:
            raise ValueError(
                f"bandwidth={bandwidth!r} is not one of {allowed}: use one of those rules or a positive number."
            )
        return bandwidth
    if isinstance(bandwidth, (bool, np.bool_)) or not isinstance(bandwidth, (int, float, np.integer, np.floating)):
        raise ValueError(f"bandwidth={bandwidth!r} is neither a rule {allowed} nor a number: pass a positive number.")
    h = float(bandwidth)
    if not (np.isfinite(h) and h >= 1e-300):
        raise ValueError(
            f"bandwidth={bandwidth!r} must be a finite positive number (at least 1e-300, "
            "below which the densities overflow)."
        )
    return h


# ---- the two evaluation routes -----------------------------------------------------------
def _linear_binning(x: np.ndarray, w: np.ndarray, lo: float, dx: float, n: int) -> np.ndarray:
    """Split each weight between its two neighbouring grid points in proportion to proximity."""
    pos = (x - lo) / dx
    j = np.clip(np.floor(pos).astype(np.intp), 0, n - 2)
    frac = np.clip(pos - j, 0.0, 1.0)
    return np.bincount(j, w * (1.0 - frac), minlength=n) + np.bincount(j + 1, w * frac, minlength=n)


def _binned_gaussian(
    x: np.ndarray, w: np.ndarray, h: float, start: float, dx: float, n: int, total: float
) -> np.ndarray:
    """Weighted Gaussian KDE of the ``x`` on the grid ``start + k dx``, k < n, that covers every
    ``x``, normalised by ``total`` (the class's whole weight, of which ``w`` may be a part)."""
    if x.size == 0:
        return np.zeros(n)
    counts = _linear_binning(x, w, start, dx, n)
    half = min(n - 1, int(np.ceil(_GAUSS_TRUNCATION * h / dx)))
    u = np.arange(-half, half + 1) * (dx / h)
    kernel = np.exp(-0.5 * u * u)
    kernel /= kernel.sum() * dx  # unit mass on the grid (a no-op to ~1e-16 unless dx > h / 2)
    dens = np.maximum(fftconvolve(counts, kernel, mode="same"), 0.0)
    # beyond the kernel's reach of every binned weight the density is exactly 0, not FFT round-off
    occupied = np.concatenate([[0], np.cumsum(counts > 0)])
    j = np.arange(n)
    reached = occupied[np.minimum(j + half + 1, n)] > occupied[np.maximum(j - half, 0)]
    return np.where(reached, dens, 0.0) / total


def _gaussian_grid(lo: float, hi: float, h: float) -> tuple[float, float, int]:
    """``(start, step, n)`` of an equally spaced grid over ``[lo, hi]`` with step ``h / 128``
    (within the size limits), plus two steps beyond each end so that mass binned next to an end
    keeps its whole linear hat. The grid is kept as start and step, never as an array of
    absolute values, so a step below the floating-point spacing of the scores still works."""
    n = int(np.clip(np.ceil((hi - lo) * _GRID_PER_BANDWIDTH / h) + 1, _MIN_GRID, _MAX_GRID))
    step = (hi - lo) / (n - 1)
    return lo - 2 * step, step, n + 4


def _grid_knots(x_sorted: np.ndarray, reach: float) -> np.ndarray:
    """Knots ``(x, z)`` of the map from scores to grid coordinates, shape (2, 2 k).

    The sorted distinct scores are cut where neighbours are more than ``2 reach`` apart; every run
    of at least :data:`_MIN_GRID_RUN` scores becomes a stretch ``[first - reach, last + reach]``
    of the grid, on which ``z`` rises with slope 1 (``z = x`` on the first stretch), while ``z``
    stays flat across the gaps between stretches. With ``reach`` the kernels' reach no kernel
    crosses a gap, so collapsing the gaps leaves every density unchanged; the scores of shorter
    runs lie off every stretch and are summed exactly. No stretch: shape (2, 0)."""
    cuts = np.flatnonzero(np.diff(x_sorted) > 2.0 * reach) + 1
    first = np.concatenate([[0], cuts])
    last = np.concatenate([cuts, [x_sorted.size]]) - 1
    dense = last - first + 1 >= _MIN_GRID_RUN
    a, b = x_sorted[first[dense]] - reach, x_sorted[last[dense]] + reach
    length = b - a
    z_a = (a[0] if a.size else 0.0) + np.concatenate([[0.0], np.cumsum(length)[:-1]])[: a.size]
    return np.vstack([np.column_stack([a, b]).ravel(), np.column_stack([z_a, z_a + length]).ravel()])


def _check_layout_knots(knots: np.ndarray, name: str) -> None:
    """Refuse knots that are not pairs of stretch ends as :func:`_grid_knots` makes them."""
    if knots.shape[1] % 2 or np.any(np.diff(knots[0]) <= 0) or np.any(np.diff(knots[1]) < 0):
        raise ValueError(
            f"{name} must hold pairs of stretch ends: scores strictly increasing, grid coordinates non-decreasing."
        )


def _to_grid(points: np.ndarray, knots: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Grid coordinates of ``points`` and whether each lies on a stretch of the grid."""
    if knots.shape[1] == 0:
        return np.zeros_like(points), np.zeros(points.shape, dtype=bool)
    if knots.shape[1] == 2:  # one stretch, where z = x
        return points, (points >= knots[0, 0]) & (points <= knots[0, 1])
    z = np.interp(points, knots[0], knots[1])
    j = np.searchsorted(knots[0], points, side="right")
    on = (j % 2 == 1) | ((j > 0) & (points == knots[0, np.maximum(j - 1, 0)]))  # inside [a_i, b_i], or on b_i
    return z, on


def _exact_gaussian(xs: np.ndarray, share: np.ndarray, h: float, points: np.ndarray) -> np.ndarray:
    """Direct sum of the Gaussian kernels of the sorted scores ``xs``, with weights ``share`` (each
    score's share of its class's weight), within ``8 h`` of each point; each window holds fewer
    than :data:`_MIN_GRID_RUN` scores."""
    out = np.zeros(points.shape[0])
    if xs.size == 0:
        return out
    reach = _GAUSS_TRUNCATION * h
    lo = np.searchsorted(xs, points - reach, side="left")
    count = np.searchsorted(xs, points + reach, side="right") - lo
    hit = np.flatnonzero(count)
    for part in np.array_split(hit, max(1, hit.size // _EXACT_CHUNK)):  # bounded memory
        rows = np.repeat(part, count[part])
        idx = np.arange(rows.size) - np.repeat(np.cumsum(count[part]) - count[part], count[part]) + lo[rows]
        u = (points[rows] - xs[idx]) / h
        np.add.at(out, rows, share[idx] * np.exp(-0.5 * u * u))
    return out / (h * np.sqrt(2.0 * np.pi))


def _interp_on_grid(points: np.ndarray, knots: np.ndarray, start: float, step: float, values: np.ndarray) -> np.ndarray:
    """Linear interpolation of the grid densities ``values`` (shape (n,)) at ``points`` through the
    layout's ``knots``; 0 off the grid's stretches."""
    z, on = _to_grid(points, knots)
    out = np.zeros(points.shape[0])
    if on.any():
        out[on] = interp_regular(z[on], start, step, values)
    return out


class _Window(NamedTuple):
    """Sorted scores of one class with prefix sums of ``w``, ``w u``, ``w u^2``,
    ``u = (x - anchor) / h`` with the anchor of the score's cluster (see :func:`_window`)."""

    xs: np.ndarray  # (n,) sorted scores
    prefix: np.ndarray  # (1 or 3, n + 1) long-double prefix sums, starting at 0
    anchor: np.ndarray  # (n,) the anchor of each score's cluster (Epanechnikov only; else empty)
    w_sum: float
    h: float
    kernel: str


class _GaussianFit(NamedTuple):
    """A Gaussian KDE of one class: densities on its grid, through the layout ``knots``, plus the
    scores summed exactly (sorted) with their shares of the class's weight."""

    knots: np.ndarray
    start: float
    step: float
    density: np.ndarray  # (n,)
    exact_x: np.ndarray
    exact_share: np.ndarray


def _layout_grid(knots: np.ndarray, h: float, first: float) -> tuple[float, float, int]:
    """The grid :func:`_gaussian_grid` lays over the stretches of ``knots`` for bandwidth ``h``;
    with no stretch (every score summed exactly) a nominal grid from the smallest score ``first``."""
    if knots.shape[1]:
        return _gaussian_grid(knots[1, 0], knots[1, -1], h)
    return _gaussian_grid(first, first + h, h)


def _fit_gaussian(x: np.ndarray, w: np.ndarray, h: float) -> _GaussianFit:
    """Bin and smooth one class's scores on a grid of its own, laid over the stretches of its scores
    (step ``h / 128``; every stretch reaches ``8 h`` beyond its scores), so its resolution does not
    depend on the other class's bandwidth; the distinct scores of runs too short for a grid are kept,
    with their pooled weights, for exact sums. Tied scores are pooled first, so an integer weight
    and repeated rows give the same layout."""
    total = float(w.sum())
    values, index = np.unique(x, return_inverse=True)
    weight = np.bincount(index, weights=w, minlength=values.size)
    knots = _grid_knots(values, _GAUSS_TRUNCATION * h)
    start, step, n = _layout_grid(knots, h, float(values[0]))
    z, on = _to_grid(values, knots)
    density = _binned_gaussian(z[on], weight[on], h, start, step, n, total)
    return _GaussianFit(knots, start, step, density, values[~on], weight[~on] / total)


def _gaussian_density(fit: _GaussianFit, h: float, points: np.ndarray) -> np.ndarray:
    """The density of :func:`_fit_gaussian` at ``points``: the grid's share by linear interpolation
    plus the exactly summed scores' share."""
    grid_part = _interp_on_grid(points, fit.knots, fit.start, fit.step, fit.density)
    return grid_part + _exact_gaussian(fit.exact_x, fit.exact_share, h, points)


def _window(xs: np.ndarray, w: np.ndarray, h: float, kernel: str) -> _Window:
    r"""Prefix sums for :func:`_window_density` from scores ``xs`` sorted ascending and their weights.

    For the Epanechnikov kernel the moments are taken about a local anchor: the sorted scores
    split into clusters wherever two neighbours are more than ``2 h`` apart (no window
    ``[p - h, p + h]`` reaches across such a gap), and each cluster is centred at its midrange.
    The window sum :math:`S_0 (1 - u^2) + 2 u S_1 - S_2` then cancels terms of the size of
    :math:`(\text{cluster span} / h)^2`, not :math:`(\text{score range} / h)^2`, which for a
    bandwidth far below the scores' spacing is 0 instead of overflowing the precision.
    """
    ws = w.astype(np.longdouble)
    terms = [ws]
    anchor = np.empty(0)
    if kernel == "epanechnikov":
        starts = np.flatnonzero(np.concatenate([[True], np.diff(xs) > 2.0 * h]))
        ends = np.append(starts[1:], xs.size) - 1
        sizes = np.diff(np.append(starts, xs.size))
        anchor = np.repeat(0.5 * xs[starts] + 0.5 * xs[ends], sizes)
        u = (xs.astype(np.longdouble) - anchor) / h
        terms += [ws * u, ws * u * u]
    prefix = np.zeros((len(terms), xs.size + 1), dtype=np.longdouble)
    for k, term in enumerate(terms):
        np.cumsum(term, out=prefix[k, 1:])
    return _Window(xs, prefix, anchor, float(w.sum()), float(h), kernel)


def _window_density(win: _Window, points: np.ndarray) -> np.ndarray:
    r"""Exact normalised KDE at ``points`` (any order; sorted points are fastest).

    Boxcar: :math:`K(u) = \tfrac12 1\{|u| \le 1\}`; Epanechnikov:
    :math:`K(u) = \tfrac34 (1 - u^2)_+`, whose sum over the window :math:`|x - x_i| \le h` is
    :math:`\tfrac34 [S_0 (1 - u^2) + 2 u S_1 - S_2]` with :math:`S_k = \sum w_i u_i^k`, ``u`` and
    :math:`u_i` measured from the anchor of the window's cluster.
    """
    h = win.h
    a = np.searchsorted(win.xs, points - h, side="left")
    b = np.searchsorted(win.xs, points + h, side="right")
    s0 = win.prefix[0, b] - win.prefix[0, a]
    if win.kernel == "boxcar":
        return s0.astype(np.float64) / (2.0 * h * win.w_sum)
    # an empty window (a == b) sums to 0 whatever its anchor
    anchor = win.anchor[np.minimum(a, win.xs.size - 1)] if win.xs.size else np.zeros(np.shape(points))
    u = (points.astype(np.longdouble) - anchor) / h
    s1 = win.prefix[1, b] - win.prefix[1, a]
    s2 = win.prefix[2, b] - win.prefix[2, a]
    total = 0.75 * (s0 * (1.0 - u * u) + 2.0 * u * s1 - s2)
    return np.maximum(total.astype(np.float64), 0.0) / (h * win.w_sum)


def class_density(
    t: ArrayLike,
    w: ArrayLike | None = None,
    *,
    grid: ArrayLike,
    kernel: str = "gaussian",
    bandwidth: float | str = "silverman",
) -> np.ndarray:
    r"""Weighted kernel density estimate of one class's scores, evaluated at ``grid``.

    .. math:: \hat f(x) = \frac{1}{\sum_i w_i} \sum_i w_i\, \frac{1}{h} K\!\left(\frac{x - t_i}{h}\right)

    Parameters
    ----------
    t : array-like of shape (n,)
        The class's scores, on whatever scale the density is wanted (e.g. the working scale).
    w : array-like of shape (n,), optional
        Non-negative frequency weights (ones by default).
    grid : array-like of shape (m,)
        Points at which to evaluate the density, in any order.
    kernel : {"gaussian", "boxcar", "epanechnikov"}
        Gaussian (``h`` = its standard deviation), boxcar (uniform on ``[-h, h]``) or
        Epanechnikov (:math:`\tfrac34 (1 - u^2)` on ``[-h, h]``). Each integrates to 1.
    bandwidth : {"silverman", "robust"} or float
        ``"silverman"``: :math:`h = 1.06\,\hat\sigma\,N^{-1/5}` with :math:`N = \sum w_i`;
        ``"robust"``: the same with :math:`\min(\hat\sigma, \mathrm{IQR}/1.349)` for
        :math:`\hat\sigma`, which a few far outlying scores cannot inflate (Silverman 1986,
        section 3.4.2).

    Returns
    -------
    ndarray of shape (m,)
        The density at each grid point (non-negative, never NaN).

    Notes
    -----
    Boxcar and Epanechnikov are exact up to round-off (prefix sums over the sorted scores;
    see the module docstring). The Gaussian is
    computed by linear binning onto an equally spaced grid of step
    :math:`\delta = h/128`, FFT convolution with the kernel truncated at :math:`\pm 8h`, and
    linear interpolation. The grid covers the stretches ``[first - 8h, last + 8h]`` of the runs
    of at least 64 distinct sorted scores whose neighbours are at most :math:`16h` apart, laid
    end to end (no kernel crosses the gaps between them, so collapsing the gaps changes no
    density); the scores of shorter runs, such as far outliers, are summed exactly.
    Binning and interpolation each perturb the estimate by :math:`O(\delta^2 f'')`: relative
    error :math:`\lesssim (\delta/h)^2 (u^2 + 1)/8 \approx 8\cdot 10^{-6}(u^2+1)` at
    :math:`u` bandwidths from the bulk of the data; the truncation adds at most
    :math:`e^{-32} \approx 10^{-14}` of the peak. Points farther than :math:`8h` from every
    score get density 0. The grid has between :math:`2^{10}` and :math:`2^{20}` points; when
    the stretches together span more than :math:`2^{13}` bandwidths (a dense run wider than
    that, not a few far outliers) the step is coarser than :math:`h/128` (the sampled kernel
    is normalised to unit mass, so the estimate still integrates to 1).
    :class:`KDECalibrator` computes each class's density so, on a grid of its own with the
    class's own bandwidth. The map :math:`p` moves by :math:`p(1-p)` times the difference of
    the two densities' relative errors, so where the scores of both classes lie within three
    bandwidths its error is below :math:`10^{-4}`, however much the two bandwidths differ, as
    long as neither class's stretches span more than :math:`2^{13}` of its bandwidths
    (checked against the direct :math:`O(NM)` sum in ``tests/baselines/test_kde.py``). In a
    gap between far clusters, where both densities are kernel tails, the map is a ratio of
    two tails whose relative errors grow as :math:`u^2`, and it can be off by more.

    References
    ----------
    Silverman, B. W. (1986). Density Estimation for Statistics and Data Analysis. Chapman & Hall.
    Wand, M. P. (1994). Fast computation of multivariate kernel estimators. Journal of
    Computational and Graphical Statistics, 3(4), 433-445.
    Fan, J., & Marron, J. S. (1994). Fast implementations of nonparametric curve estimators.
    Journal of Computational and Graphical Statistics, 3(1), 35-56.
    """
    kernel = _check_kernel(kernel)
    x = check_scores(t, name="t")
    w = check_sample_weight(w, x.shape[0], name="w")
    pts = check_scores(grid, name="grid")
    keep = w > 0
    x, w = x[keep], w[keep]
    h = _check_bandwidth(bandwidth, ("silverman", "robust"))
    if isinstance(h, str):
        h = silverman_bandwidth(x, w, robust=h == "robust")
        if not h > 0:
            raise ValueError("t has no spread, so Silverman's bandwidth is 0: pass bandwidth=<positive number>.")
    if kernel == "gaussian":
        return _gaussian_density(_fit_gaussian(x, w, h), h, pts)
    order = np.argsort(x, kind="stable")
    return _window_density(_window(x[order], w[order], h, kernel), pts)


# ---- the calibrator ----------------------------------------------------------------------
class KDECalibrator(ClassConditional, Calibrator):
    r"""Calibration by Bayes' rule with class-conditional kernel density estimates.

    .. math::

        P(y=1 \mid x) = \frac{\pi\, \tilde f_1(x)}{\pi\, \tilde f_1(x) + (1-\pi)\, \tilde f_0(x)},
        \qquad \tilde f_c = \hat f_c + \epsilon,

    (Naeini, Cooper & Hauskrecht 2014, eq. 5), where :math:`\hat f_c` is the weighted KDE of
    class ``c`` (see :func:`class_density`), :math:`\pi = W_1/(W_0 + W_1)` the weighted
    share of positives, and ``x`` the score on the KDE scale (``scale``).

    With ``bandwidth="shared"`` both classes use one bandwidth and, where the floor
    :math:`\epsilon` is negligible, the map is exactly the Nadaraya-Watson kernel regression
    of the labels, :math:`\sum_i w_i y_i K_h(x - x_i) / \sum_i w_i K_h(x - x_i)`.

    **Behaviour away from the data.** The ratio of two tiny densities is unstable (0/0 for
    the compact kernels, a bandwidth artefact for the Gaussian), so:

    1. queries are clamped to the range of the training scores ``[x_min, x_max]`` (on the
       KDE scale): beyond it the map keeps its value at the nearest observed score, as
       isotonic regression does;
    2. each class density is floored by
       :math:`\epsilon = 10^{-9} / (x_{max} - x_{min} + 2 h_{max})`, a :math:`10^{-9}` share
       of uniform mass over the data range: inside gaps where neither class has data within
       reach of its kernel the map shrinks to :math:`\pi`, and elsewhere the floor changes
       it by about :math:`10^{-9}` relative.

    Outputs are therefore always finite and in [0, 1].

    Parameters
    ----------
    kernel : {"gaussian", "boxcar", "epanechnikov"}, default "gaussian"
        ``h`` is the Gaussian's standard deviation, the others' half-width.
    bandwidth : {"silverman", "shared"} or float, default "silverman"
        ``"silverman"``: per class :math:`h_c = 1.06\,A_c\,N_c^{-1/5}` with
        :math:`N_c = W_c` (weights count as repeated rows), where :math:`A_c` is the class's
        standard deviation :math:`\hat\sigma_c` on the probability scale and
        :math:`\min(\hat\sigma_c, \mathrm{IQR}_c/1.349)` on the unbounded scales (logits,
        decision values; Silverman 1986, section 3.4.2). On an unbounded scale a few far
        outlying scores inflate :math:`\hat\sigma_c` without limit, and with it the bandwidth,
        until one kernel spans both classes; on [0, 1] they cannot, and there the quartiles
        of a class piled at one end would undersmooth the rest of it. ``"shared"``: that rule
        on both classes pooled, used for both (the Nadaraya-Watson estimator); a float: that
        bandwidth for both classes, on the KDE scale. A class whose scores have no spread
        takes the pooled bandwidth.
    scale : {"probability", "logit"}, default "probability"
        The scale of the KDE for probability scores: the probability itself (as in Naeini et
        al.; the default because on scores whose logits spread far, such as their
        quadratic-SVM scores, Silverman's rule on the logit scale gives a bandwidth too wide
        for where the classes meet: ``benchmarks/kde_scale.py`` measures it, its output is
        ``benchmarks/results/kde_scale.md``), or its logit (the working scale).
        ``scale`` applies to probability scores only: decision values
        (``score_kind="decision"``) are always used as they are.
    boundary : {"none", "reflect"}, default "none"
        On the probability scale, what happens to the part of each kernel beyond 0 and 1.
        ``"none"``: it is lost (the estimator of Naeini et al.): each class density has less
        than unit mass on [0, 1], and the map near an end mixes the two classes' losses, which
        differ with their bandwidths. ``"reflect"``: every score also counts at its mirror
        images :math:`-x` and :math:`2 - x` (the reflection estimator of Schuster 1985), so
        each class density has unit mass on [0, 1]: reflection removes the loss of mass at the
        ends, a bias of order 1. The estimate's slope at 0 and 1 is zero, so where the class's
        true density :math:`f` is not flat at an end a bias of order :math:`h` remains there:
        :math:`2 h f'(0) \int_0^\infty u K(u)\,du` at 0, which is :math:`h f'(0) \sqrt{2/\pi}`
        for the Gaussian kernel (Jones 1993). A bias of order :math:`h^2` at the ends needs
        boundary kernels or renormalisation (Jones 1993), or the logit scale. The bandwidths
        are those of the scores themselves. Only with ``scale="probability"`` and probability
        scores.
    score_kind : {"probability", "decision"}, default "probability"

    Attributes
    ----------
    bandwidth_ : ndarray of shape (2,)
        Bandwidths of class 0 and class 1 on the KDE scale.
    prior_ : float
        :math:`\pi`, the weighted share of positives.
    kde_range_ : ndarray of shape (2,)
        ``[x_min, x_max]``: the training range on the KDE scale (queries are clamped to it).
    density_floor_ : float
        :math:`\epsilon`.
    class_grid_knots_ : list of two ndarrays of shape (2, k_c)
        Gaussian kernel only: for each class, the stretches of the KDE scale its grid covers
        (laid over that class's scores, reaching :math:`8 h_c` beyond them), as knots
        ``(x, z)`` of the piecewise-linear map from the KDE scale to the grid coordinate
        (slope 1 across each stretch ``[x_{2i}, x_{2i+1}]``, flat across the gaps between
        them; see :func:`class_density`).
    class_grid_start_, class_grid_step_ : ndarray of shape (2,)
        Gaussian kernel only: each class's grid ``start + k step``, k < m_c, in the grid
        coordinate ``z`` of its knots (step :math:`h_c/128`, coarser only for stretches
        longer than :math:`2^{13} h_c`).
    class_density_ : list of two ndarrays of shape (m_c,)
        Gaussian kernel only: each class's binned density on its grid.
    exact_support_, exact_share_ : list of two ndarrays
        Gaussian kernel only: each class's distinct scores that are summed exactly (runs of
        fewer than 64 distinct scores, farther than the kernel's reach from the class's others),
        sorted, and each one's share of its class's weight (tied rows pooled).
    grid_start_, grid_step_, grid_knots_, density_
        Only in a calibrator loaded from a file written before each class had its own grid:
        that file's one grid of both classes (step :math:`\min_c h_c / 128`), which it
        predicts with.
    support_, support_weight_ : list of two ndarrays
        Boxcar / Epanechnikov only: each class's sorted scores (KDE scale) and weights (the
        exact route keeps all N training scores; the Gaussian keeps its grid and the few
        ``exact_support_`` scores).

    Notes
    -----
    Fit and prediction cost :math:`O((N + M)\log(N + M))`; the times, against isotonic
    regression's, are measured by ``benchmarks/bench_kde.py`` (its output,
    ``benchmarks/results/bench_kde.md``).

    Examples
    --------
    >>> import numpy as np
    >>> from bayescal.baselines.kde import KDECalibrator
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 2, 2000)
    >>> s = np.where(y == 1, rng.beta(5, 2, 2000), rng.beta(2, 5, 2000))
    >>> cal = KDECalibrator().fit(s, y)
    >>> cal.predict_proba([0.2, 0.5, 0.8])[:, 1].round(2)  # truth: 0.015, 0.5, 0.985
    array([0.02, 0.51, 0.99])

    References
    ----------
    Naeini, M. P., Cooper, G. F., & Hauskrecht, M. (2014). Binary classifier calibration:
    a Bayesian non-parametric approach. arXiv:1401.3390 (SIAM SDM 2015).
    Nadaraya, E. A. (1964). On estimating regression. Theory of Probability and its
    Applications, 9(1), 141-142. Watson, G. S. (1964). Smooth regression analysis. Sankhya A,
    26(4), 359-372.
    Jones, M. C. (1993). Simple boundary correction for kernel density estimation. Statistics
    and Computing, 3(3), 135-146.
    Schuster, E. F. (1985). Incorporating support constraints into nonparametric estimators
    of densities. Communications in Statistics - Theory and Methods, 14(5), 1123-1136.
    Silverman, B. W. (1986). Density Estimation for Statistics and Data Analysis. Chapman & Hall.
    """

    monotone = False
    _predict_params = ("score_kind", "kernel", "scale", "boundary")  # prediction reads them as fitted
    _fitted_schema = {
        "bandwidth_": schema.array("f", (2,), low=schema.TINY),
        "prior_": schema.scalar("f", low=0.0, high=1.0),
        "kde_range_": schema.array("f", (2,), order="nondecreasing"),
        "density_floor_": schema.scalar("f", low=schema.TINY),
        "class_grid_start_": schema.array("f", (2,), optional=True),
        "class_grid_step_": schema.array("f", (2,), low=schema.TINY, optional=True),
        "class_grid_knots_": schema.array_list("f", (2, "kc"), length=2, order="nondecreasing", optional=True),
        "class_density_": schema.array_list("f", ("gc",), length=2, low=0.0, optional=True),
        # the one grid of both classes in files written before each class had its own
        "grid_start_": schema.scalar("f", optional=True),
        "grid_step_": schema.scalar("f", low=schema.TINY, optional=True),
        "density_": schema.array("f", (2, "g"), low=0.0, optional=True),
        "grid_knots_": schema.array("f", (2, "k"), optional=True),
        "exact_support_": schema.array_list("f", ("e",), length=2, order="nondecreasing", optional=True),
        "exact_share_": schema.array_list("f", ("e",), length=2, low=0.0, high=1.0, optional=True),
        "support_": schema.array_list("f", ("m",), length=2, order="nondecreasing", optional=True),
        "support_weight_": schema.array_list("f", ("m",), length=2, low=0.0, optional=True),
    }

    def __init__(
        self,
        *,
        kernel: str = "gaussian",
        bandwidth: float | str = "silverman",
        scale: str = "probability",
        boundary: str = "none",
        score_kind: str = "probability",
    ):
        self.kernel = kernel
        self.bandwidth = bandwidth
        self.scale = scale
        self.boundary = boundary
        self.score_kind = score_kind

    def _bounded_scale(self) -> bool:
        """Whether the KDE runs on the probability itself, in [0, 1] (otherwise on logits or decision values)."""
        return self.scale == "probability" and self.score_kind == "probability"

    def _kde_scale(self, t: np.ndarray) -> np.ndarray:
        return expit(t) if self._bounded_scale() else t

    def _check_params(self) -> tuple[str, float | str]:
        """Check the parameters; return the kernel and the bandwidth (a rule's name or a float)."""
        kernel = _check_kernel(self.kernel)
        bandwidth = _check_bandwidth(self.bandwidth, ("silverman", "shared"))
        if self.scale not in ("logit", "probability"):
            raise ValueError(f"scale={self.scale!r} is not 'logit' or 'probability': pick one of those.")
        if self.boundary not in ("none", "reflect"):
            raise ValueError(f"boundary={self.boundary!r} is not 'none' or 'reflect': pick one of those.")
        if self.boundary == "reflect" and not self._bounded_scale():
            raise ValueError(
                "boundary='reflect' mirrors the kernels at 0 and 1 of the probability scale: it needs "
                "scale='probability' and probability scores (score_kind='probability'); else use boundary='none'."
            )
        return kernel, bandwidth

    def _mass(self) -> float:
        """The class densities' factor: 3 with reflection, whose sums run over each score and its
        two mirror images but are normalised by three times the class's weight; else 1."""
        return 3.0 if self.boundary == "reflect" else 1.0

    def _fit(self, data: ScoreData, X: Any = None) -> None:
        kernel, bandwidth = self._check_params()
        keep = data.w > 0
        x, y, w = self._kde_scale(data.t)[keep], data.y[keep], data.w[keep]
        xs = [x[y == c] for c in (0, 1)]
        ws = [w[y == c] for c in (0, 1)]
        if xs[0].size == 0 or xs[1].size == 0:
            raise ValueError("sample_weight is zero for every sample of one class: give each class positive weight.")
        robust = not self._bounded_scale()
        pooled = silverman_bandwidth(x, w, robust=robust)
        if bandwidth == "silverman":
            h = [silverman_bandwidth(xs[c], ws[c], robust=robust) for c in (0, 1)]
            h = [hc if hc > 0 else pooled for hc in h]
        elif bandwidth == "shared":
            h = [pooled, pooled]
        else:
            h = [bandwidth, bandwidth]
        lo, hi = float(x.min()), float(x.max())
        if not min(h) > 0:  # every score identical: any positive bandwidth gives P = pi
            h = [1e-3 * max(1.0, abs(lo))] * 2
        self.bandwidth_ = np.array(h, dtype=np.float64)
        self.prior_ = float(ws[1].sum() / w.sum())
        self.kde_range_ = np.array([lo, hi])
        self.density_floor_ = DENSITY_FLOOR / (hi - lo + 2.0 * max(h))
        if self.boundary == "reflect":  # each score at x, -x and 2 - x, with its weight
            xs = [np.concatenate([xc, -xc, 2.0 - xc]) for xc in xs]
            ws = [np.concatenate([wc, wc, wc]) for wc in ws]
        if kernel == "gaussian":
            fits = [_fit_gaussian(xs[c], ws[c], h[c]) for c in (0, 1)]
            self.class_grid_knots_ = [fit.knots for fit in fits]
            self.class_grid_start_ = np.array([fit.start for fit in fits])
            self.class_grid_step_ = np.array([fit.step for fit in fits])
            self.class_density_ = [fit.density for fit in fits]
            self.exact_support_ = [fit.exact_x for fit in fits]
            self.exact_share_ = [fit.exact_share for fit in fits]
        else:
            order = [np.argsort(xs[c], kind="stable") for c in (0, 1)]
            self.support_ = [xs[c][order[c]] for c in (0, 1)]
            self.support_weight_ = [ws[c][order[c]] for c in (0, 1)]
        self._restore()

    def _require(self, names: tuple[str, ...]) -> None:
        """Refuse a fit (a file's) without one of the fitted attributes ``names``."""
        missing = [n for n in names if not hasattr(self, n)]
        if missing:
            raise ValueError(f"the {self.kernel!r} kernel needs the fitted attributes {missing}.")

    def _check_fitted(self) -> None:
        super()._check_fitted()
        if self.kernel != "gaussian":
            self._require(("support_", "support_weight_"))
            if any(w.sum() <= 0 for w in self.support_weight_):
                raise ValueError("support_weight_ gives a class no weight.")
            return
        if not hasattr(self, "class_density_"):  # a file written before each class had its own grid
            self._check_shared_grid()
            return
        self._require(("class_grid_knots_", "class_grid_start_", "class_grid_step_", "exact_support_", "exact_share_"))
        for c in (0, 1):  # each grid is the one the fit lays over the stretches of its knots
            knots, exact = self.class_grid_knots_[c], self.exact_support_[c]
            _check_layout_knots(knots, f"class_grid_knots_[{c}]")
            if not (knots.shape[1] or exact.size):
                raise ValueError(f"class {c} has neither a grid stretch nor an exactly summed score.")
            start, step, n = _layout_grid(knots, float(self.bandwidth_[c]), float(exact[0]) if exact.size else 0.0)
            found = (self.class_grid_start_[c], self.class_grid_step_[c], self.class_density_[c].size)
            if found[2] != n or not np.allclose(found[:2], [start, step], rtol=1e-9, atol=0.0):
                raise ValueError(
                    f"the density grid of class {c} (start {found[0]}, step {found[1]}, {found[2]} points) is not "
                    f"the grid {start}, {step}, {n} points of its class_grid_knots_ and bandwidth_."
                )

    def _check_shared_grid(self) -> None:
        """The one grid of both classes (files written before each class had its own) is the one that
        fit laid over the stretches of ``grid_knots_`` with the smaller bandwidth."""
        self._require(("grid_start_", "grid_step_", "density_"))
        h = float(np.min(self.bandwidth_))
        knots = self._layout_knots()
        _check_layout_knots(knots, "grid_knots_")
        if knots.shape[1] and hasattr(self, "grid_knots_"):
            start, step, n = _gaussian_grid(knots[1, 0], knots[1, -1], h)
        elif hasattr(self, "grid_knots_"):  # every score summed exactly: the nominal grid
            lo = min(float(xs[0]) for xs in self.exact_support_ if xs.size)
            start, step, n = _gaussian_grid(lo, lo + h, h)
        else:  # a file written before the grid had stretches: one grid over the scores' range
            start, step, n = _gaussian_grid(self.kde_range_[0] - h, self.kde_range_[1] + h, h)
        if self.density_.shape[1] != n or not np.allclose(
            [self.grid_start_, self.grid_step_], [start, step], rtol=1e-9, atol=0.0
        ):
            raise ValueError(
                f"the density grid (start {self.grid_start_}, step {self.grid_step_}, {self.density_.shape[1]} "
                f"points) is not the grid {start}, {step}, {n} points of grid_knots_, kde_range_ and bandwidth_."
            )

    def _layout_knots(self) -> np.ndarray:
        """The shared grid's ``grid_knots_``, or for a file without them the identity over its one grid."""
        if hasattr(self, "grid_knots_"):
            return np.asarray(self.grid_knots_, dtype=np.float64).reshape(2, -1)
        end = self.grid_start_ + (self.density_.shape[1] - 1) * self.grid_step_
        return np.array([[self.grid_start_, end], [self.grid_start_, end]])

    def _gaussian_fits(self) -> list[_GaussianFit]:
        """Each class's Gaussian KDE from the fitted attributes; for a file written before each class
        had its own grid, the shared grid's row of the class."""
        exact = [
            (self.exact_support_[c], self.exact_share_[c]) if hasattr(self, "exact_support_") else (np.empty(0),) * 2
            for c in (0, 1)
        ]
        if hasattr(self, "class_density_"):
            return [
                _GaussianFit(
                    self.class_grid_knots_[c],
                    float(self.class_grid_start_[c]),
                    float(self.class_grid_step_[c]),
                    self.class_density_[c],
                    *exact[c],
                )
                for c in (0, 1)
            ]
        knots = self._layout_knots()
        return [
            _GaussianFit(knots, float(self.grid_start_), float(self.grid_step_), self.density_[c], *exact[c])
            for c in (0, 1)
        ]

    def _restore(self) -> None:
        if self.kernel == "gaussian":
            self._gaussian = self._gaussian_fits()
        else:
            self._windows = [
                _window(self.support_[c], self.support_weight_[c], float(self.bandwidth_[c]), self.kernel)
                for c in (0, 1)
            ]

    def _class_densities(self, x: np.ndarray) -> np.ndarray:
        """Unfloored class densities at KDE-scale points ``x`` (clamped to ``kde_range_``), shape (2, n).

        Gaussian: per class, linear interpolation on the regular grid of ``class_density_``
        (:func:`~bayescal._interp.interp_regular`) through the gap collapse of
        ``class_grid_knots_``, plus direct sums over the few ``exact_support_`` scores in reach.
        Boxcar and Epanechnikov: exact sums over
        the kernel window, the points evaluated in sorted order so that the binary searches
        walk the sorted training scores forwards (several times faster for large inputs).
        """
        return self._densities(np.clip(x, *self.kde_range_))

    def _densities(self, x: np.ndarray) -> np.ndarray:
        """Unfloored class densities at KDE-scale points ``x``, shape (2, n), by either route."""
        if self.kernel == "gaussian":
            out = np.array([_gaussian_density(self._gaussian[c], float(self.bandwidth_[c]), x) for c in (0, 1)])
        else:
            order = np.argsort(x)
            out = np.empty((2, x.size))
            out[:, order] = [_window_density(self._windows[c], x[order]) for c in (0, 1)]
        return out * self._mass()

    def _calibrate(self, t: np.ndarray, X: Any = None) -> np.ndarray:
        f0, f1 = self._class_densities(self._kde_scale(t)) + self.density_floor_
        a = self.prior_ * f1
        return a / (a + (1.0 - self.prior_) * f0)

    # ---- ClassConditional ----------------------------------------------------------------
    def class_prior_draws(self) -> xr.DataArray:
        """The weighted share of positives :math:`\\pi` as a one-draw posterior, dims ``(chain, draw)``."""
        check_is_fitted(self)
        return xr.DataArray([[self.prior_]], dims=("chain", "draw"), name="pi")

    def density_map(self, grid: ArrayLike | None = None) -> xr.DataArray:
        r"""The two class KDEs on ``grid`` (input scale), dims ``(chain, draw, class, score)`` with one draw.

        Densities of the input-scale score: :math:`\hat f_c(x(s))\,|dx/ds|`, ``x`` being the
        KDE scale (for ``scale="logit"`` and probability scores :math:`dx/ds = 1/(s(1-s))`).
        Unfloored and not clamped to the data range; the Gaussian kernel's density is zero
        beyond its reach (eight bandwidths past the scores). With ``scale="logit"`` the density
        at a probability below 1e-12 of 0 or 1 is the KDE's at its own logit (the fitted exact 0
        and 1 sit at the clipped logit), so each class's density integrates to 1 over (0, 1).
        With ``scale="probability"`` and ``boundary="none"`` the kernels are not reflected at 0
        and 1 (the estimator of Naeini et al., whose map this is), so the part of each kernel
        beyond them is lost: a class's density integrates to less than 1 over [0, 1], markedly
        so for scores piled near 0 or 1, and :func:`~bayescal.diagnostics.score_density_check`
        then finds too little mass in the end bins; with ``boundary="reflect"`` it integrates
        to 1.

        Parameters
        ----------
        grid : array-like of scores or int, optional
            As in :meth:`~bayescal.base.Calibrator.calibration_map`: input-scale scores, or a
            number of points (201 when None) over the fitted scores' range.

        Returns
        -------
        xarray.DataArray
            Named ``density``, dims ``(chain, draw, class, score)`` with one chain and one
            draw, ``class = [0, 1]``; attrs ``score_scale``, ``calibrator``,
            ``observed_range`` and ``extrapolated`` as in ``calibration_map``.
        """
        g = self._grid(grid)
        on_logits = self.score_kind == "probability" and not self.scale == "probability"
        if on_logits:
            # the logit itself, not the working scale's (clipped at 1e-12 of 0 and 1): below the
            # clip the density is the KDE's own there, so it integrates to 1 over (0, 1)
            edge = (g <= 0.0) | (g >= 1.0)
            gi = np.where(edge, 0.5, g)
            t = logit(gi)
        else:
            t = to_working(g, self.score_kind)
        dens = self._densities(self._kde_scale(t))
        if on_logits:  # density of s, not of logit(s)
            dens = np.where(edge, 0.0, dens / (gi * (1.0 - gi)))
        return xr.DataArray(
            dens[None, None],
            dims=("chain", "draw", "class", "score"),
            coords={"chain": [0], "draw": [0], "class": [0, 1], "score": g},
            name="density",
            attrs=self._grid_attrs(g),
        )
