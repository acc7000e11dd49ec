r"""Averaging calibration maps of several models by their leave-one-out log scores of the labels.

The candidate models predict a label from its score:

* the DPM with each component family that was fitted (:mod:`bayescal.bayesian.mixture`;
  Gaussian and Beta components for probability scores): :math:`p_m(y \mid t, \theta)` from
  the two fitted class densities and :math:`\pi`;
* the null model in which the scores carry no information (:math:`f_1 = f_0`, so
  :math:`p(y = 1 \mid t) = \pi`, with the posterior :math:`\pi \sim \mathrm{Beta}(1 + n_1, 1 + n_0)`
  the DPM already draws).

They are averaged with pseudo-BMA+ weights (Yao, Vehtari, Simpson & Gelman 2018): Akaike-type
weights of the leave-one-out log scores of the labels,
:math:`\mathrm{elpd}_m = \sum_i \log p_m(y_i \mid t_i, D_{-i})`, stabilised by the Bayesian
bootstrap over the points,

.. math::
    \hat w_m = \frac{1}{B} \sum_{b=1}^{B}
        \frac{e^{n \sum_i \alpha_{bi} \mathrm{elpd}_{m, i}}}
             {\sum_{m'} e^{n \sum_i \alpha_{bi} \mathrm{elpd}_{m', i}}},
    \qquad \alpha_b \sim \mathrm{Dirichlet}(1, \dots, 1),

computed by :func:`arviz_stats.compare`. A DPM's leave-one-out predictive comes from
Pareto-smoothed importance sampling (:func:`psis_log_weights`, the smoothing of
:func:`arviz_stats.psislw` run on all points at once): the posterior is conditioned on the
pair :math:`(t_i, y_i)`, so the importance ratios are :math:`1 / p(t_i, y_i \mid \theta)`
(:func:`bayescal.bayesian.mixture.log_joint`), while the quantity predicted is the label,
:math:`p(y_i \mid t_i, \theta)` (a check against cross-validation is recorded on
``docs/evidence/sampler_history.md``). The null model's leave-one-out terms are exact.

The weights are not posterior model probabilities (Bayesian model averaging would weigh
each model by its marginal likelihood): they are predictive weights, and the DPM computes
them on at most ``AVERAGING_POINTS`` (1,000) points drawn from the data
(:mod:`bayescal.bayesian.dpm`), so from that size on they no longer sharpen with more data.
The mixture of the models' map draws (a share :math:`\hat w_m` of the draws from model m)
is a model-averaged predictive distribution of the map and its quantiles a model-averaged
band, a posterior band given the weights. Where the scores carry signal a DPM wins over the constant by
many standard errors and the constant's weight is 0; where they carry none, the map a
nonparametric model fits to chance differences between the classes loses to the constant.
Between the component families the weights follow which shape predicts the labels better:
Gaussian components on the logit scale where scores are close to logit-normal, Beta
components where they pile near 0 and 1 (exponential tails on the logit scale); where the
two predict about equally well, both contribute, and the band spans what either shape
allows. Stacking weights (the same paper), which maximise the mixture's leave-one-out log
score, keep a small share on the constant even where a DPM wins by far, to insure the few
labels the DPM predicts badly, and those constant draws stretch the 95 % band towards
:math:`\pi` wherever the map is far from it; hence pseudo-BMA+ weights (measured history:
``docs/evidence/sampler_history.md``).

References
----------
Yao, Y., Vehtari, A., Simpson, D. & Gelman, A. (2018). Using stacking to average Bayesian
predictive distributions. Bayesian Analysis 13, 917-1007.
Vehtari, A., Gelman, A. & Gabry, J. (2017). Practical Bayesian model evaluation using
leave-one-out cross-validation and WAIC. Statistics and Computing 27, 1413-1432.
"""

from __future__ import annotations

import warnings

import numpy as np
import xarray as xr

__all__ = ["CONSTANT", "loo_log_scores", "model_weights", "psis_log_weights"]

CONSTANT = "constant"
"""Name of the no-signal model among the averaged ones."""


def _elpd_data(elpd_i: np.ndarray, lppd_i: np.ndarray, pareto_k: np.ndarray, n_samples: int, good_k: float):
    """ArviZ's leave-one-out result from pointwise terms: the sum, its standard error
    :math:`\\sqrt{n \\operatorname{var}(\\mathrm{elpd}_i)}` and the effective number of parameters
    :math:`\\sum_i (\\mathrm{lppd}_i - \\mathrm{elpd}_i)`, as :func:`arviz_stats.loo` reports them."""
    from arviz_stats import ELPDDataLOO

    n = elpd_i.size
    return ELPDDataLOO(
        elpd=float(elpd_i.sum()),
        se=float(np.sqrt(n * np.var(elpd_i, ddof=1))),
        p=float((lppd_i - elpd_i).sum()),
        n_samples=n_samples,
        n_data_points=n,
        scale="log",
        warning=bool(np.any(pareto_k > good_k)),
        good_k=good_k,
        elpd_i=xr.DataArray(elpd_i, dims="obs_id"),
        pareto_k=xr.DataArray(pareto_k, dims="obs_id"),
    )


def _null_elpd(y: np.ndarray, n_samples: int, good_k: float):
    """Exact leave-one-out terms of the null model: :math:`p(y_i \\mid y_{-i}) = n_{y_i} / (n + 1)`.

    (Under :math:`\\pi \\sim \\mathrm{Beta}(1, 1)` the posterior predictive of a label is
    :math:`(1 + n_y)/(2 + n)`; leaving the point out removes it from :math:`n_y` and
    :math:`n`.) No importance sampling is needed, so every Pareto k is 0.
    """
    n, n1 = y.size, int(y.sum())
    count = np.where(y == 1, n1, n - n1)
    elpd_i = np.log(count / (n + 1.0))
    lppd_i = np.log((count + 1.0) / (n + 2.0))
    return _elpd_data(elpd_i, lppd_i, np.zeros(n), n_samples, good_k)


def psis_log_weights(log_ratios: np.ndarray, r_eff: float) -> tuple[np.ndarray, np.ndarray]:
    r"""Pareto-smoothed importance-sampling log weights, for every column of ``log_ratios`` at once.

    The algorithm of :func:`arviz_stats.psislw` (Vehtari, Simpson, Gelman, Yao & Gabry 2024),
    which fits one column at a time in Python; here every step runs on all columns together,
    with the same results (tested to 1e-10). Per column, the :math:`M` largest ratios
    (:math:`M = \lfloor 3\sqrt{S / r_\mathrm{eff}} \rfloor` when :math:`S r_\mathrm{eff} > 225`,
    else :math:`\lfloor S / 5 \rfloor`) are replaced by the expected order statistics of a
    generalised Pareto distribution fitted above the next largest ratio (the empirical-Bayes
    fit of Zhang & Stephens 2009 with a weak N(0.5) prior on its shape :math:`k`, as ArviZ),
    capped at the largest raw ratio; the weights are then normalised.

    Parameters
    ----------
    log_ratios : ndarray of shape (S, n)
        Log importance ratios of S draws for n points (here :math:`-\log p(t_i, y_i \mid \theta_s)`).
    r_eff : float
        Relative efficiency of the draws.

    Returns
    -------
    log_weights : ndarray of shape (S, n)
        Smoothed log weights, normalised per column.
    pareto_k : ndarray of shape (n,)
        The fitted shape :math:`\hat k` per column (NaN where the tail's first quartile equals
        its minimum, so no distribution is fitted and the tail is left as it is).

    References
    ----------
    Vehtari, A., Simpson, D., Gelman, A., Yao, Y. & Gabry, J. (2024). Pareto smoothed importance
    sampling. JMLR 25(72), 1-58.
    Zhang, J. & Stephens, M. A. (2009). A new and efficient estimation method for the generalized
    Pareto distribution. Technometrics 51, 316-325.
    """
    from scipy.special import logsumexp

    lw = np.asarray(log_ratios, dtype=np.float64)
    S, n = lw.shape
    lw = lw - lw.max(axis=0)
    M = int(np.floor(3 * np.sqrt(S / r_eff))) if S * r_eff > 225 else S // 5
    cols = np.arange(n)
    top = np.argpartition(lw, S - M - 1, axis=0)[S - M - 1 :]  # the cutoff and the M tail draws, unordered
    order = np.take_along_axis(top, np.argsort(lw[top, cols], axis=0), axis=0)  # ascending
    ranked = lw[order, cols]
    tail_log, cutoff_log = ranked[1:], ranked[0]
    x = np.exp(tail_log) - np.exp(cutoff_log)  # (M, n), ascending
    # Zhang & Stephens' empirical-Bayes fit, as arviz_stats' _gpdfit, per column
    m_est = 30 + int(M**0.5)
    xstar = x[int(M / 4 + 0.5) - 1]
    fitted = xstar > x[0]
    xs = np.where(fitted, xstar, 1.0)
    b = (1.0 - np.sqrt(m_est / (np.arange(1, m_est + 1) - 0.5)))[:, None] / (3.0 * xs) + 1.0 / x[-1]  # (m, n)
    with np.errstate(invalid="ignore", divide="ignore"):
        k = np.stack([np.log1p(-bj * x).mean(axis=0) for bj in b])  # (m, n), row by row: no (m, M, n) temporary
        len_scale = M * (np.log(-b / k) - k - 1.0)
        w_theta = np.exp(len_scale - logsumexp(len_scale, axis=0))
        w_theta = np.where(w_theta >= 10 * np.finfo(float).eps, w_theta, 0.0)
        b_post = (b * w_theta).sum(axis=0) / w_theta.sum(axis=0)
        kappa = np.log1p(-b_post * x).mean(axis=0)
        sigma = -kappa / b_post
        kappa = (M * kappa + 10 * 0.5) / (M + 10)
        kappa = np.where(np.isnan(kappa), np.inf, kappa)
        # expected order statistics of the fitted tail, above the cutoff, capped at the largest ratio
        smooth = fitted & np.isfinite(kappa) & (sigma > 0)
        p = ((np.arange(M) + 0.5) / M)[:, None]
        kap = np.where(kappa == 0, 1.0, kappa)
        q = np.where(kappa == 0, -sigma * np.log1p(-p), sigma * np.expm1(-kap * np.log1p(-p)) / kap) + np.exp(
            cutoff_log
        )
        smoothed = np.minimum(np.log(q), tail_log[-1])
    out = lw.copy()
    out[order[1:], cols] = np.where(smooth, smoothed, tail_log)
    out -= logsumexp(out, axis=0)
    return out, np.where(fitted, kappa, np.nan)


def _weighted_elpd(ll_label: np.ndarray, log_weights: np.ndarray, pareto_k: np.ndarray):
    """PSIS leave-one-out terms of the labels from smoothed, normalised log weights (S, n):
    :math:`\\mathrm{elpd}_i = \\log \\sum_s w_{si}\\, p(y_i \\mid t_i, \\theta_s)`, the terms
    :func:`arviz_stats.loo` computes point by point, here for all points at once."""
    from scipy.special import logsumexp

    S = ll_label.shape[0]
    elpd_i = logsumexp(log_weights + ll_label, axis=0)
    lppd_i = logsumexp(ll_label, axis=0) - np.log(S)
    return _elpd_data(elpd_i, lppd_i, pareto_k, S, min(1.0 - 1.0 / np.log10(S), 0.7))


def model_weights(
    log_joints: dict[str, np.ndarray], y: np.ndarray, reffs: dict[str, float], constant: bool = True
) -> dict:
    """Pseudo-BMA+ weights of the DPM fits' maps and, with ``constant``, the constant map (module docstring).

    Parameters
    ----------
    log_joints : dict of str to ndarray of shape (S, 2, n)
        Per DPM fit (named by its component family): :math:`\\log p(t_i, y = c \\mid \\theta_s)`
        per draw, class and point (the same n points for every fit).
    y : ndarray of shape (n,)
        Labels (0 or 1) of the points.
    reffs : dict of str to float
        Relative efficiency of each fit's draws (effective sample size / S) for the Pareto tails.
    constant : bool, default True
        Whether the no-signal model (:data:`CONSTANT`) is one of the averaged models.

    Returns
    -------
    dict
        ``weight_<name>`` per model (DPM fits and, with ``constant``, ``weight_constant``;
        they sum to one), ``elpd_<name>`` (leave-one-out log scores of the labels),
        ``elpd_diff_se`` (the largest standard error of a difference to the best model),
        ``pareto_k_max`` and ``pareto_k_high`` over the DPM fits (the largest k, and the
        largest share of points whose importance weights have k above ArviZ's threshold:
        their leave-one-out terms are less reliable), ``n_points``.
    """
    import arviz_stats

    y = np.asarray(y, dtype=np.int64)
    elpds, k_max, k_high = {}, [], []
    with warnings.catch_warnings():  # high Pareto k is reported in the result, not warned per fit
        warnings.simplefilter("ignore")
        for name, log_joint in log_joints.items():
            _, ll_label, lw, pareto_k = _log_scores(log_joint, y, reffs[name])
            elpds[name] = _weighted_elpd(ll_label, lw, pareto_k)
            k_max.append(float(np.nanmax(pareto_k)) if np.any(np.isfinite(pareto_k)) else float("nan"))
            k_high.append(float(np.mean(pareto_k > elpds[name].good_k)))
        first = next(iter(elpds.values()))
        if constant:
            elpds[CONSTANT] = _null_elpd(y, first.n_samples, first.good_k)
        if len(elpds) > 1:
            table = arviz_stats.compare(elpds, method="BB-pseudo-BMA", round_to="none")
            raw = {name: max(float(table.loc[name, "weight"]), 0.0) for name in elpds}
            diff_se = float(table["dse"].max())
        else:
            raw, diff_se = dict.fromkeys(elpds, 1.0), 0.0
    total = sum(raw.values())
    out: dict = {f"weight_{name}": w / total for name, w in raw.items()}
    out |= {f"elpd_{name}": float(e.elpd) for name, e in elpds.items()}
    out |= {
        "elpd_diff_se": diff_se,
        "pareto_k_max": float(np.nanmax(k_max)) if np.any(np.isfinite(k_max)) else float("nan"),
        "pareto_k_high": float(max(k_high)),
        "n_points": int(y.size),
    }
    return out


def _log_scores(
    log_joint: np.ndarray, y: np.ndarray, reff: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    r"""Per draw and point, :math:`\log p(t_i, y_i \mid \theta_s)` and :math:`\log p(y_i \mid t_i,
    \theta_s)`, and the Pareto-smoothed leave-one-out log weights with their shapes k (the
    posterior conditioned on the pair, so the ratios are :math:`1 / p(t_i, y_i \mid \theta_s)`)."""
    ll_joint = log_joint[:, y, np.arange(y.size)]  # (S, n)
    ll_label = ll_joint - np.logaddexp(log_joint[:, 0], log_joint[:, 1])
    log_weights, pareto_k = psis_log_weights(-ll_joint, reff)
    return ll_joint, ll_label, log_weights, pareto_k


def loo_log_scores(log_joint: np.ndarray, y: np.ndarray, reff: float) -> tuple[np.ndarray, np.ndarray, float]:
    r"""PSIS leave-one-out log scores of each point: of its label, and of the pair (score, label).

    :math:`\log p(y_i \mid t_i, D_{-i})` and :math:`\log p(t_i, y_i \mid D_{-i})`, each
    :math:`\log \sum_s w_{si}\, p(\cdot \mid \theta_s)` with the Pareto-smoothed, normalised
    weights :math:`w_{si} \propto 1 / p(t_i, y_i \mid \theta_s)` (:func:`psis_log_weights`). The
    label terms are what :func:`model_weights` weighs; the joint terms score the class densities
    themselves, so models of the same points on the same working scale are compared by their sum.

    Parameters
    ----------
    log_joint : ndarray of shape (S, 2, n)
        :math:`\log p(t_i, y = c \mid \theta_s)` per draw, class and point.
    y : ndarray of shape (n,)
        Labels (0 or 1) of the points.
    reff : float
        Relative efficiency of the draws (effective sample size / S).

    Returns
    -------
    label, joint : ndarray of shape (n,)
    pareto_k_max : float
        The largest Pareto shape of the points' importance weights (above 0.7 their terms are
        less reliable).

    References
    ----------
    Vehtari, A., Gelman, A. & Gabry, J. (2017). Practical Bayesian model evaluation using
    leave-one-out cross-validation and WAIC. Statistics and Computing 27, 1413-1432.
    """
    from scipy.special import logsumexp

    with warnings.catch_warnings():  # high Pareto k is returned, not warned per point
        warnings.simplefilter("ignore")
        ll_joint, ll_label, log_weights, pareto_k = _log_scores(log_joint, np.asarray(y, dtype=np.int64), reff)
    k_max = float(np.nanmax(pareto_k)) if np.any(np.isfinite(pareto_k)) else float("nan")
    return logsumexp(log_weights + ll_label, axis=0), logsumexp(log_weights + ll_joint, axis=0), k_max
