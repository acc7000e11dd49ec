"""ELiTE: ensemble of linear trend estimations (Naeini & Cooper 2016)."""

from __future__ import annotations

import numpy as np

from bayescal import _schema as schema
from bayescal._interp import interp_sorted
from bayescal._validation import check_bool, check_integer, check_number
from bayescal._warnings import warn
from bayescal.base import Calibrator
from bayescal.data import ScoreData

__all__ = ["ELiTE"]


def _collapse(t: np.ndarray, y: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sort and merge tied scores: distinct ``t``, total weight, weighted mean label."""
    order = np.argsort(t, kind="stable")
    t, y, w = t[order], y[order], w[order]
    start = np.flatnonzero(np.r_[True, t[1:] != t[:-1]])
    weight = np.add.reduceat(w, start)
    pos = np.add.reduceat(w * y, start)
    return t[start], weight, pos / weight


def _line_fit(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Fitted values of the weighted least-squares line (the mean when ``x`` has one point)."""
    from bayescal.baselines.trend_filter import weighted_line

    a, b = weighted_line(x, y, w)
    return a + b * x


def _group(t: np.ndarray, w: np.ndarray, ybar: np.ndarray, max_points: int):
    """Merge consecutive distinct scores into ``max_points`` groups of (nearly) equal size.

    Each group's node is its weighted mean score, clipped to the group's span
    ``[t[first], t[last]]``: rounding can put the mean of scores a few ulps apart outside
    it. Distinct sorted scores give disjoint spans, so the nodes are strictly increasing.
    """
    bounds = np.linspace(0, t.size, max_points + 1).round().astype(np.intp)
    first, last = bounds[:-1], bounds[1:] - 1
    weight = np.add.reduceat(w, first)
    nodes = np.clip(np.add.reduceat(w * t, first) / weight, t[first], t[last])
    return nodes, weight, np.add.reduceat(w * ybar, first) / weight


class ELiTE(Calibrator):
    r"""ELiTE: an AICc-weighted ensemble of l1 linear trend filters of the labels over the sorted scores.

    Algorithm (Naeini & Cooper 2016, with the choices this implementation makes):

    1. **Tie collapse.** Sort the training scores on the working scale ``t``; merge equal
       scores into one point with weight :math:`n_j` (the summed sample weight) and target
       :math:`\bar y_j` (the weighted mean label). With more than ``max_points`` distinct
       scores, consecutive distinct scores are merged further into ``max_points`` groups of
       (nearly) equal numbers of distinct scores, each at its weighted mean score, clipped
       to the group's score range (the mean of scores a few ulps apart can round outside it),
       so the nodes are strictly increasing (see *Large data* below). Call the resulting
       points :math:`j = 1, \dots, n`.
    2. **Positions are ranks.** The trend filter sees the points at equally spaced positions
       :math:`1, \dots, n` (the rank of each distinct score), i.e. Kim et al.'s second
       difference :math:`(D\beta)_j = \beta_j - 2\beta_{j+1} + \beta_{j+2}` applied to the
       labels in the order of the sorted scores. The authors' R package (``ELiTE_1.0`` in
       pakdaman/calibration) thins the scores and calls ``glmgen::trendfilter(y, z, ...)``
       with the scores ``y`` and the labels ``z``, and predicts with ``x.new = y``, which
       suggests positions at the (thinned) probability scores; but glmgen declares
       ``trendfilter(y, x, ...)``, response first, so the call as written is ambiguous. Ranks
       are used here; positions at the working-scale scores (unequal spacing, second divided
       differences, also supported by :mod:`bayescal.baselines.trend_filter`) are compared with
       them by ``benchmarks/elite_positions.py`` (its output,
       ``benchmarks/results/elite_positions.md``): about the same quality at several times the
       ADMM iterations, because tiny score gaps (probabilities piled at 0 and 1) make the
       problem ill conditioned.
    3. **Path.** For each of ``n_lambdas`` = 50 penalties log-spaced from
       :math:`\lambda_{\max}` down to ``lambda_min_ratio`` :math:`= 10^{-4}\,\lambda_{\max}`,
       solve

       .. math:: \hat\beta(\lambda) = \arg\min_\beta \tfrac12 \sum_j n_j(\bar y_j - \beta_j)^2
                 + \lambda \lVert D\beta \rVert_1 ,

       where :math:`\lambda_{\max} = \lVert (DD^\top)^{-1} D\, N(\bar y - \beta^{LS})\rVert_\infty`
       (:math:`N = \operatorname{diag}(n_j)`, :math:`\beta^{LS}` the weighted least-squares
       line) is the smallest penalty whose solution is a straight line (derivation in
       :mod:`bayescal.baselines.trend_filter`; with unit weights it is Kim et al.'s
       :math:`\lVert (DD^\top)^{-1} D y\rVert_\infty`). Solved by the Ramdas & Tibshirani
       (2016) ADMM with a dynamic-programming fused-lasso step, warm-started along the path.
    4. **Score each model** by AICc with the Bernoulli log-likelihood of the fit clipped to
       :math:`[\epsilon, 1-\epsilon]` (``clip_eps``), evaluated at every distinct training
       score (the fit interpolated there when points were grouped):

       .. math:: \ell = \sum_j n_j\,[\bar y_j \log p_j + (1-\bar y_j)\log(1-p_j)], \quad
                 k = \#\text{knots} + 2, \quad
                 \mathrm{AICc} = -2\ell + 2k + \frac{2k(k+1)}{N - k - 1},

       with :math:`N = \sum_j n_j` the number of (weighted) samples; a model with
       :math:`k \ge N - 1` gets AICc :math:`= +\infty` (weight 0).
    5. **Average** the models with relative-likelihood weights
       :math:`\omega_i \propto \exp(-(\mathrm{AICc}_i - \min \mathrm{AICc})/2)`
       (``average=False`` keeps the single best model instead). Each model's map is the
       piecewise-linear interpolation, on the working scale, of its fitted values at the
       points clipped to [0, 1]; since interpolation is linear in the node values, the
       averaged map is the interpolation of the averaged node values.
    6. **Extrapolation** is constant: below the smallest (above the largest) training score
       the map keeps its value at that score. A linear extension of the end segments could
       leave [0, 1] and rests on the slope of the sparsest data.

    Degenerate data: a single distinct score gives the constant weighted mean label; two
    give the line through their two means (one model); labels that lie exactly on a line
    (:math:`\lambda_{\max} = 0`) give that line.

    *Large data.* ADMM iterations cost :math:`O(n)` each and a path needs thousands of
    them, so with more than ``max_points`` distinct scores the points are grouped (step 1):
    the fit is then piecewise linear over group nodes, each holding about
    ``n_distinct / max_points`` distinct scores, and the likelihood is still evaluated at
    every distinct score. ``max_points=None`` solves on all distinct scores. Fitting costs
    :math:`O(N \log N)` for the sort plus a path cost bounded by ``max_points``.

    Parameters
    ----------
    score_kind : {"probability", "decision"}
    n_lambdas : int, default 50
        Number of penalties on the path (models in the ensemble).
    lambda_min_ratio : float, default 1e-4
        Smallest penalty as a fraction of :math:`\lambda_{\max}`.
    clip_eps : float, default 1e-3
        Fits are clipped to ``[clip_eps, 1 - clip_eps]`` inside the log-likelihood.
    average : bool, default True
        Average the models (True) or keep the one with the lowest AICc (False).
    max_points : int or None, default 2000
        Largest number of points the trend filter sees (see *Large data*).
    tol : float, default 1e-4
        Relative tolerance of the ADMM primal and dual residuals.
    max_iter : int, default 2000
        Cap on ADMM iterations per penalty; a fit that reaches it warns (the penalties
        affected are named) and uses the last iterate.

    Attributes
    ----------
    nodes_t_ : ndarray (n_nodes,)
        Working-scale scores of the points the trend filter saw.
    nodes_p_ : ndarray (n_nodes,)
        The (averaged or selected) calibrated probability at each node.
    lambdas_ : ndarray (n_models,)
        The penalties of the path (in the units of the objective with weights :math:`n_j`).
    dof_ : ndarray (n_models,)
        Degrees of freedom (knots + 2) of each model.
    aicc_ : ndarray (n_models,)
    model_weights_ : ndarray (n_models,)
        Relative-likelihood weights (one-hot at the best model when ``average=False``).
    n_iter_ : ndarray (n_models,)
        ADMM iterations used per penalty.

    References
    ----------
    Naeini, M. P. & Cooper, G. F. (2016). Binary classifier calibration using an ensemble of
    linear trend estimation. SIAM International Conference on Data Mining (SDM), 261-269.
    Kim, S.-J., Koh, K., Boyd, S. & Gorinevsky, D. (2009). l1 trend filtering. SIAM Review 51(2).
    Ramdas, A. & Tibshirani, R. J. (2016). Fast and flexible ADMM algorithms for trend
    filtering. Journal of Computational and Graphical Statistics 25(3).
    Hurvich, C. M. & Tsai, C.-L. (1989). Regression and time series model selection in small
    samples. Biometrika 76(2).
    """

    monotone = False
    _fitted_schema = {
        "nodes_t_": schema.array("f", ("k",), order="increasing"),
        "nodes_p_": schema.array("f", ("k",), low=0.0, high=1.0),
        "lambdas_": schema.array("f", ("m",), low=0.0, max_size=schema.int_param("n_lambdas")),
        "dof_": schema.array("i", ("m",), low=0, max_size=schema.int_param("n_lambdas")),
        "aicc_": schema.array("f", ("m",), finite=False, max_size=schema.int_param("n_lambdas")),
        "model_weights_": schema.array(
            "f", ("m",), low=0.0, high=1.0, sums_to_one=True, max_size=schema.int_param("n_lambdas")
        ),
        "n_iter_": schema.array("i", ("m",), low=0, max_size=schema.int_param("n_lambdas")),
    }

    def __init__(
        self,
        *,
        score_kind: str = "probability",
        n_lambdas: int = 50,
        lambda_min_ratio: float = 1e-4,
        clip_eps: float = 1e-3,
        average: bool = True,
        max_points: int | None = 2000,
        tol: float = 1e-4,
        max_iter: int = 2000,
    ):
        self.score_kind = score_kind
        self.n_lambdas = n_lambdas
        self.lambda_min_ratio = lambda_min_ratio
        self.clip_eps = clip_eps
        self.average = average
        self.max_points = max_points
        self.tol = tol
        self.max_iter = max_iter

    def _check_params(self) -> None:
        check_integer(self.n_lambdas, "n_lambdas", 1)
        if not 0.0 < check_number(self.lambda_min_ratio, "lambda_min_ratio") < 1.0:
            raise ValueError(
                f"lambda_min_ratio={self.lambda_min_ratio!r} must lie strictly between 0 and 1 (1e-4 by default)."
            )
        if not 0.0 < check_number(self.clip_eps, "clip_eps") < 0.5:
            raise ValueError(f"clip_eps={self.clip_eps!r} must lie strictly between 0 and 0.5 (1e-3 by default).")
        if self.max_points is not None:
            check_integer(self.max_points, "max_points", 3)
        check_number(self.tol, "tol", low=0.0, inclusive=False)
        check_integer(self.max_iter, "max_iter", 1)
        check_bool(self.average, "average")

    _positions = "ranks"
    """The trend filter's positions (step 2): ``"ranks"``; ``"scores"`` (the working-scale scores,
    unequally spaced) only for ``benchmarks/elite_positions.py``, which measures the choice."""

    def _fit(self, data: ScoreData, X=None) -> None:
        from bayescal.baselines.trend_filter import lambda_max, trend_filter_path

        self._check_params()
        keep = data.w > 0  # zero-weight rows carry no information
        t_u, w_u, y_u = _collapse(data.t[keep], data.y[keep].astype(np.float64), data.w[keep])
        if self.max_points is not None and t_u.size > self.max_points:
            t_n, w_n, y_n = _group(t_u, w_u, y_u, int(self.max_points))
        else:
            t_n, w_n, y_n = t_u, w_u, y_u
        n = t_n.size
        n_total = float(w_u.sum())
        eps = float(self.clip_eps)

        def aicc(p_nodes: np.ndarray, k: int) -> float:
            p = np.clip(np.interp(t_u, t_n, p_nodes) if n != t_u.size else p_nodes, eps, 1.0 - eps)
            loglik = float((w_u * (y_u * np.log(p) + (1.0 - y_u) * np.log1p(-p))).sum())
            if k >= n_total - 1:
                return np.inf
            return -2.0 * loglik + 2.0 * k + 2.0 * k * (k + 1) / (n_total - k - 1)

        pos = np.arange(n, dtype=np.float64) if self._positions == "ranks" else t_n.copy()  # step 2
        lam_max = lambda_max(pos, y_n, w_n) if n >= 3 else 0.0
        if lam_max <= 0.0:
            # one distinct score: the mean; two, or labels exactly on a line: the least-squares line
            beta = _line_fit(pos, y_n, w_n)
            k = min(n, 2)
            self._store(
                t_n, beta, np.array([0.0]), np.array([k]), np.array([aicc(beta, k)]), np.array([1.0]), np.array([0])
            )
            return
        lambdas = lam_max * np.logspace(0.0, np.log10(float(self.lambda_min_ratio)), int(self.n_lambdas))
        dof, scores, iters = [], [], []
        stopped = []  # penalties whose ADMM hit max_iter before reaching tol
        # streaming relative-likelihood average: acc = sum_i exp(-(AICc_i - ref)/2) clip(beta_i), ref = running min
        acc = np.zeros(n)
        best = None
        ref = np.inf
        for fit in trend_filter_path(pos, y_n, w_n, lambdas, tol=float(self.tol), max_iter=int(self.max_iter)):
            k = fit.n_knots + 2
            score = aicc(fit.beta, k)
            dof.append(k)
            scores.append(score)
            iters.append(fit.n_iter)
            if not fit.converged:
                stopped.append(fit.lam)
            beta = np.clip(fit.beta, 0.0, 1.0)
            if score < ref:
                acc *= np.exp(-(ref - score) / 2.0) if np.isfinite(ref) else 0.0
                ref = score
                best = beta
            if np.isfinite(score):
                acc += np.exp(-(score - ref) / 2.0) * beta
        if stopped:
            warn(
                f"ELiTE: the trend filter stopped at max_iter={int(self.max_iter)} before its residuals fell "
                f"below tol={float(self.tol):g} for {len(stopped)} of {lambdas.size} penalties (lambda from "
                f"{min(stopped):.3g} to {max(stopped):.3g}): those models are not at their optimum, and their "
                "fits, knot counts and AICc weights are approximate. Raise max_iter (2000 by default) or tol."
            )
        scores = np.array(scores)
        if not np.isfinite(ref):
            # every model has as many parameters as samples: keep the line (the first model)
            weights = np.zeros(scores.size)
            weights[0] = 1.0
            p = np.clip(_line_fit(pos, y_n, w_n), 0.0, 1.0)
        elif self.average:
            rel = np.exp(-(scores - ref) / 2.0)
            weights = rel / rel.sum()
            p = acc / rel.sum()
        else:
            weights = (np.arange(scores.size) == int(np.argmin(scores))).astype(np.float64)
            p = best
        self._store(t_n, p, lambdas, np.array(dof), scores, weights, np.array(iters))

    def _store(self, t_nodes, p, lambdas, dof, aicc, weights, iters) -> None:
        self.nodes_t_ = np.asarray(t_nodes, dtype=np.float64)
        self.nodes_p_ = np.clip(p, 0.0, 1.0)
        self.lambdas_ = np.asarray(lambdas, dtype=np.float64)
        self.dof_ = np.asarray(dof, dtype=np.int64)
        self.aicc_ = np.asarray(aicc, dtype=np.float64)
        self.model_weights_ = np.asarray(weights, dtype=np.float64)
        self.n_iter_ = np.asarray(iters, dtype=np.int64)

    def _calibrate(self, t: np.ndarray, X=None) -> np.ndarray:
        if self.nodes_t_.size == 1:
            return np.full(t.shape, self.nodes_p_[0])
        return interp_sorted(t, self.nodes_t_, self.nodes_p_)
