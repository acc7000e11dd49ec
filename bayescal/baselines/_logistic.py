"""Weighted logistic regression by Newton's method, shared by Platt, beta and scaling-binning."""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit

from bayescal._stats import weighted_mean_std

__all__ = ["centred_fit", "logistic_fit", "platt_fit"]

_RIDGE = 1e-10
_WARM_START_N = 20_000
_NEWTON_STEPS = 6
_HALVINGS = 20
_Y_CLIP = 1e-15  # a class with no weight: the constant fit stops at logit(1e-15) ~ -34.5


def logistic_fit(design: np.ndarray, y: np.ndarray, w: np.ndarray, *, intercept: bool) -> np.ndarray:
    """Weighted logistic regression by Newton's method, with a tiny ridge on the slopes.

    Minimises :math:`L(\\beta) = \\sum_i w_i \\ell(y_i, x_i^\\top\\beta) / \\sum_i w_i
    + \\tfrac{\\lambda}{2} \\sum_{j \\in \\mathrm{slopes}} (r_j \\beta_j)^2` (log-loss
    :math:`\\ell`, :math:`\\lambda = 10^{-10}`, :math:`r_j` the root mean square of slope row
    :math:`j`, so the fit does not depend on the scale of the rows), a convex problem solved
    on the rows divided by :math:`r_j`. An intercept alone has the closed form
    :math:`\\operatorname{logit}(\\sum_i w_i y_i / \\sum_i w_i)`. Otherwise:

    * up to ``_WARM_START_N`` rows, by ``scipy.optimize.minimize(method="trust-exact")``
      from the constant fit (slopes 0), the loss, gradient and Hessian sharing one pass per iterate;
    * above, from the fit to every tenth row (recursively, so deterministic), refined by
      Newton steps :math:`\\beta \\leftarrow \\beta - H^{-1} \\nabla L` (halved until the loss
      does not rise; a subsample holding one class only is no start) until a step
      is below :math:`\\delta = 10^{-6}(1 + \\lVert\\beta\\rVert_\\infty)`: from such a
      close start Newton converges quadratically (the next step would be of order
      :math:`\\delta^2`, about :math:`10^{-12}`), so two or three passes over the data
      suffice. If it has not converged after ``_NEWTON_STEPS`` steps, the trust-region
      search takes over from where it stopped.

    Parameters
    ----------
    design : ndarray of shape (k, n)
        One row per coefficient (rows contiguous, for speed). With ``intercept=True`` the
        last row must be all ones; it is not penalised.
    y : ndarray of shape (n,)
        0/1 labels as floats.
    w : ndarray of shape (n,)
        Non-negative weights with a positive sum.

    Returns
    -------
    ndarray of shape (k,)
    """
    k = design.shape[0]
    wn = w / w.max()
    wn = wn / wn.sum()
    wy = wn * y
    if intercept and k == 1:  # the constant fit has a closed form: the logit of the weighted mean
        ybar = float(np.clip(wy.sum(), _Y_CLIP, 1.0 - _Y_CLIP))
        return np.array([np.log(ybar) - np.log1p(-ybar)])
    # each slope row divided by its root mean square, so the Hessian is well conditioned and the
    # fit does not depend on the scale of the scores (decision values of 1e50 or 1e-50 are fitted
    # like values of 1): the ridge acts on the slopes of the rescaled rows
    scale = np.ones(k)
    n_slopes = k - 1 if intercept else k
    top = np.abs(design[:n_slopes]).max(axis=1)
    top[top == 0] = 1.0
    scale[:n_slopes] = top * np.sqrt(np.mean((design[:n_slopes] / top[:, None]) ** 2, axis=1))
    scale[scale == 0] = 1.0
    if np.any(scale != 1.0):
        design = design / scale[:, None]
    ridge = np.full(k, _RIDGE)
    if intercept:
        ridge[-1] = 0.0
    return _newton(design, y, wn, wy, ridge, intercept) / scale


def centred_fit(rows: list[np.ndarray], target: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, float]:
    r"""Weighted logistic regression of ``target`` on ``rows`` with an intercept, on centred rows.

    Fitted by :func:`logistic_fit` on each row centred and scaled, :math:`(x_j - \mu_j)/\sigma_j`
    (the weighted mean and standard deviation of the row; 1 for :math:`\sigma_j` when it has no
    spread), and mapped back: :math:`a_j = a'_j/\sigma_j`, :math:`c = c' - \sum_j a'_j\mu_j/\sigma_j`.
    The centring makes the fit, and its tiny ridge, independent of where the rows sit: decision
    values with a large common offset get the slopes of the same values without it.

    Parameters
    ----------
    rows : list of ndarray of shape (n,)
        The features (none: the intercept alone).
    target : ndarray of shape (n,)
        Targets in [0, 1] (0/1 labels, or Platt's smoothed targets).
    w : ndarray of shape (n,)
        Non-negative weights with a positive sum.

    Returns
    -------
    slopes : ndarray of shape (len(rows),)
        On the rows' own scales.
    intercept : float
    """
    centre, scale = np.zeros(len(rows)), np.ones(len(rows))
    for j, row in enumerate(rows):
        mu, sd = weighted_mean_std(row, w)
        centre[j], scale[j] = mu, (sd if sd > 0 else 1.0)
    design = np.vstack([(row - m) / sd for row, m, sd in zip(rows, centre, scale)] + [np.ones_like(target)])
    beta = logistic_fit(design, target, w, intercept=True)
    return beta[:-1] / scale, float(beta[-1] - np.sum(beta[:-1] * centre / scale))


def platt_fit(t: np.ndarray, target: np.ndarray, w: np.ndarray) -> tuple[float, float]:
    r"""Weighted logistic regression :math:`\sigma(a t + b)` of ``target`` on one score ``t``
    (:func:`centred_fit`): the slope ``a`` and intercept ``b`` on the scale of ``t``."""
    (a,), b = centred_fit([t], target, w)
    return float(a), b


def _newton(
    design: np.ndarray, y: np.ndarray, wn: np.ndarray, wy: np.ndarray, ridge: np.ndarray, intercept: bool
) -> np.ndarray:
    """:func:`logistic_fit` on a scaled design with normalised weights ``wn`` (``wy = wn * y``)."""
    k, n = design.shape
    beta = np.zeros(k)
    if intercept:  # start from the constant fit
        ybar = float(np.clip(wy.sum(), _Y_CLIP, 1.0 - _Y_CLIP))
        beta[-1] = np.log(ybar) - np.log1p(-ybar)

    def grad_hess(beta, p):
        return (design @ (wn * p - wy) + ridge * beta, (design * (wn * p * (1.0 - p))) @ design.T + np.diag(ridge))

    def loss(beta, eta):
        softplus = np.log1p(np.exp(-np.abs(eta)))  # log(1 + e^eta), stably (faster than np.logaddexp)
        softplus += np.maximum(eta, 0.0)
        return float(wn @ softplus - wy @ eta + 0.5 * (ridge * beta**2).sum())

    if n > _WARM_START_N:
        sub_w, sub_y = wn[::10], y[::10]
        # a subsample that misses a class is separable: no use as a start
        held = sub_y[sub_w > 0]
        if held.size and held.max() > 0.0 and held.min() < 1.0:
            sub_wn = sub_w / sub_w.sum()
            beta = _newton(np.ascontiguousarray(design[:, ::10]), sub_y, sub_wn, sub_wn * sub_y, ridge, intercept)
        eta = beta @ design
        current = loss(beta, eta)
        for _ in range(_NEWTON_STEPS):
            g, H = grad_hess(beta, expit(eta))
            step = np.linalg.lstsq(H, g, rcond=None)[0]
            for _ in range(_HALVINGS):  # damped: halve a step that does not lower the loss
                trial = beta - step
                eta_trial = trial @ design
                value = loss(trial, eta_trial)
                if value <= current:
                    break
                step = 0.5 * step
            else:
                break  # no descent along the Newton direction: leave it to the trust-region search
            beta, eta, current = trial, eta_trial, value
            if np.abs(step).max() <= 1e-6 * (1.0 + np.abs(beta).max()):
                return beta

    cache: dict[str, Any] = {}

    def terms(beta):
        if "beta" not in cache or not np.array_equal(cache["beta"], beta):
            eta = beta @ design
            g, H = grad_hess(beta, expit(eta))
            cache.update(beta=beta.copy(), fun=loss(beta, eta), jac=g, hess=H)
        return cache

    res = minimize(
        lambda b: terms(b)["fun"],
        beta,
        jac=lambda b: terms(b)["jac"],
        hess=lambda b: terms(b)["hess"],
        method="trust-exact",
        options={"gtol": 1e-10},
    )
    return res.x
