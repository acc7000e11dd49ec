"""Weighted logistic regression by Newton's method, shared by Platt, beta and scaling-binning."""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit

__all__ = ["logistic_fit"]

_RIDGE = 1e-10
_WARM_START_N = 20_000
_NEWTON_STEPS = 6
_HALVINGS = 20


def logistic_fit(design: np.ndarray, y: np.ndarray, w: np.ndarray, *, intercept: bool) -> np.ndarray:
    """Weighted logistic regression by Newton's method, with a tiny ridge on the slopes.

    Minimises :math:`L(\\beta) = \\sum_i w_i \\ell(y_i, x_i^\\top\\beta) / \\sum_i w_i
    + \\tfrac{\\lambda}{2} \\sum_{j \\in \\mathrm{slopes}} \\beta_j^2` (log-loss
    :math:`\\ell`, :math:`\\lambda = 10^{-10}`), a convex problem:

    * up to ``_WARM_START_N`` rows, by ``scipy.optimize.minimize(method="trust-exact")``
      from :math:`\\beta = 0`, the loss, gradient and Hessian sharing one pass per iterate;
    * above, from the fit to every tenth row (recursively, so deterministic), refined by
      plain Newton steps :math:`\\beta \\leftarrow \\beta - H^{-1} \\nabla L` until a step
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
    k, n = design.shape
    ridge = np.full(k, _RIDGE)
    if intercept:
        ridge[-1] = 0.0
    wn = w / w.sum()
    wy = wn * y
    beta = np.zeros(k)
    if intercept:  # start from the constant fit, the exact answer when the intercept is all there is
        ybar = float(np.clip(wy.sum(), 1e-300, 1.0))
        beta[-1] = np.log(ybar) - np.log1p(-ybar) if ybar < 1.0 else 700.0
        if k == 1:
            return beta

    def grad_hess(beta, p):
        return (design @ (wn * p - wy) + ridge * beta,
                (design * (wn * p * (1.0 - p))) @ design.T + np.diag(ridge))

    def loss(beta, eta):
        return float(wn @ np.logaddexp(0.0, eta) - wy @ eta + 0.5 * (ridge * beta**2).sum())

    if n > _WARM_START_N:
        sub_w, sub_y = w[::10], y[::10]
        # a subsample that misses a class is separable: no use as a start
        if sub_w.sum() > 0 and 0.0 < sub_w @ sub_y < sub_w.sum():
            beta = logistic_fit(np.ascontiguousarray(design[:, ::10]), sub_y, sub_w, intercept=intercept)
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

    res = minimize(lambda b: terms(b)["fun"], beta, jac=lambda b: terms(b)["jac"],
                   hess=lambda b: terms(b)["hess"], method="trust-exact", options={"gtol": 1e-10})
    return res.x
