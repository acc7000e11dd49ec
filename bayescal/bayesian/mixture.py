r"""Numpy evaluation of mixture densities and calibration maps from posterior draws.

Every inference route returns the same draws (weights :math:`w_{ck}`, two parameters per
component, class prior :math:`\pi`, atom masses :math:`q_{ca}`), so this module is the
single place where they turn into densities and maps. Two component families
(:data:`FAMILIES`) are evaluated on the working scale :math:`t`:

* ``"gaussian"``: parameters :math:`(\mu_{ck}, \sigma_{ck})`,
  :math:`\log \phi_{ck}(t) = \log \mathcal N(t \mid \mu_{ck}, \sigma_{ck}^2)`;
* ``"beta"``: parameters :math:`(a_{ck}, b_{ck})`, a Beta(a, b) density of the probability
  :math:`s = \operatorname{expit}(t)` written on the logit scale (the logistic-beta, or
  type-IV generalised logistic, density),
  :math:`\log \phi_{ck}(t) = a \log \operatorname{expit}(t) + b \log \operatorname{expit}(-t) - \log B(a, b)`.
  Its tails are exponential in :math:`t` (rates :math:`a` and :math:`b`), so a mixture
  fits scores piled near 0 and 1, where Gaussian tails do not.

Continuous part of class :math:`c`:

.. math:: \log f_c(t) = \operatorname{logsumexp}_k \big[\log w_{ck} + \log \phi_{ck}(t)\big]

The map away from atoms, with :math:`Q_c = \sum_a q_{ca}` the atom mass of class c,

.. math::
    P(y=1 \mid t) = \operatorname{expit}\Big(\log\tfrac{\pi}{1-\pi}
        + \log(1 - Q_1) + \log f_1(t) - \log(1 - Q_0) - \log f_0(t)\Big),

computed from log densities so that far in the tails, where both densities underflow,
the ratio stays finite (never 0/0). At an atom value :math:`a` the point masses dominate
any density, so :math:`P(y=1 \mid a) = \pi q_{1a} / (\pi q_{1a} + (1-\pi) q_{0a})`.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from scipy.special import betaln, expit, log_expit

__all__ = ["FAMILIES", "PARAMS", "log_density", "log_joint", "map_draws"]

FAMILIES = ("gaussian", "beta")
PARAMS = {"gaussian": ("mu", "sigma"), "beta": ("beta_a", "beta_b")}
"""The posterior variables holding each family's two component parameters."""

_LOG_SQRT_2PI = 0.5 * np.log(2.0 * np.pi)
_T_FAR = 1e150  # |t| beyond this is clipped: its squared z-score would overflow, and the map's
#                 far-tail limit (set by the widest component) is reached long before


_PARALLEL_ELEMENTS = 2**18  # draws x components x points above which rows are split over threads
_THREADS = max(1, min(2, os.cpu_count() or 1))


def log_density(
    t: np.ndarray, weight: np.ndarray, p1: np.ndarray, p2: np.ndarray, family: str = "gaussian"
) -> np.ndarray:
    r"""Log density of mixtures at points ``t``, one mixture per leading index.

    Parameters
    ----------
    t : ndarray of shape (n,)
        Working-scale points.
    weight, p1, p2 : ndarray of shape (..., K)
        Mixture weights (summing to one over the last axis) and the two component parameters
        of ``family`` (means and scales, or Beta shapes a and b).
    family : {"gaussian", "beta"}, default "gaussian"

    Returns
    -------
    ndarray of shape (..., n)
        :math:`\log \sum_k w_k \phi_k(t)` by a log-sum-exp over the components (compiled,
        one mixture at a time, the mixtures split over two threads when there are many): finite
        wherever some component's squared z-score is (for Gaussians, :math:`|t - \mu_k| / \sigma_k`
        below about 1e154; points beyond +-1e150 are evaluated at +-1e150, and the calibrators
        hold the map constant beyond their data long before), else -inf; terms more than
        700 nats below a point's largest are taken at 700 nats below it (a relative change
        below 1e-303).
    """
    t = np.clip(np.asarray(t, dtype=np.float64), -_T_FAR, _T_FAR)
    if family not in FAMILIES:
        raise ValueError(f"family={family!r} is not one of {FAMILIES}.")
    lead = weight.shape[:-1]
    K = weight.shape[-1]
    w2, a2, b2 = (np.ascontiguousarray(np.asarray(a, dtype=np.float64).reshape(-1, K)) for a in (weight, p1, p2))
    with np.errstate(divide="ignore"):
        if family == "gaussian":
            const = np.log(w2) - np.log(b2) - _LOG_SQRT_2PI
            xa, xb = t, t
        else:
            const = np.log(w2) - betaln(a2, b2)
            xa, xb = log_expit(t), log_expit(-t)
    out = np.empty((w2.shape[0], t.size))
    from bayescal.bayesian._gibbs_kernels import mixture_logsumexp as kernel

    code = 0 if family == "gaussian" else 1
    rows = w2.shape[0]
    args = (np.ascontiguousarray(xa), np.ascontiguousarray(xb), const, a2, b2, code, out)
    workers = min(_THREADS, rows) if rows * K * t.size >= _PARALLEL_ELEMENTS else 1
    if workers > 1:
        bounds = np.linspace(0, rows, workers + 1).round().astype(int)
        with ThreadPoolExecutor(max_workers=workers) as pool:
            list(pool.map(lambda j: kernel(*args, bounds[j], bounds[j + 1]), range(workers)))
    else:
        kernel(*args, 0, rows)
    return out.reshape(*lead, t.size)


def log_joint(
    t: np.ndarray,
    atoms_t: np.ndarray,
    pi: np.ndarray,
    weight: np.ndarray,
    p1: np.ndarray,
    p2: np.ndarray,
    atom_prob: np.ndarray,
    family: str = "gaussian",
) -> np.ndarray:
    r"""Log joint probability of each point with each class, per draw, atoms included.

    At a point :math:`t` off the atoms, :math:`\log p(t, y=c) = \log \pi_c + \log(1 - Q_c) + \log f_c(t)`
    (a density in :math:`t`); at an atom value :math:`a`, :math:`\log \pi_c + \log q_{ca}` (a
    probability), with :math:`\pi_1 = \pi`, :math:`\pi_0 = 1 - \pi`.

    Parameters
    ----------
    t : ndarray of shape (n,)
        Working-scale points.
    atoms_t : ndarray of shape (A,)
        Atom values on the working scale; points equal to one take its atom masses.
    pi : ndarray of shape (S,)
        Class-1 prior per draw.
    weight, p1, p2 : ndarray of shape (S, 2, K)
        Mixture weights and component parameters per draw and class.
    atom_prob : ndarray of shape (S, 2, A)
        Atom masses within each class (A may be 0).
    family : {"gaussian", "beta"}, default "gaussian"

    Returns
    -------
    ndarray of shape (S, 2, n)
    """
    t = np.asarray(t, dtype=np.float64)
    idx = np.full(t.size, -1)
    for j, a in enumerate(np.asarray(atoms_t, dtype=np.float64)):
        idx[t == a] = j
    cont = idx < 0
    log_prior = np.stack([np.log1p(-pi), np.log(pi)], axis=1)[..., None]  # (S, 2, 1)
    with np.errstate(divide="ignore"):
        if cont.all() and t.size:  # no atom among the points: the densities' array is the result
            out = log_density(t, weight, p1, p2, family)
            out += _log_off_atoms(atom_prob)[..., None]  # in place, summed in the same order as below
        else:
            out = np.empty((pi.shape[0], 2, t.size))
            if cont.any():
                out[:, :, cont] = log_density(t[cont], weight, p1, p2, family) + _log_off_atoms(atom_prob)[..., None]
            out[:, :, ~cont] = np.log(atom_prob[:, :, idx[~cont]])
    out += log_prior
    return out


def _log_off_atoms(atom_prob: np.ndarray) -> np.ndarray:
    r""":math:`\log(1 - Q_c)`, each class's probability off its atoms, from the atom masses (..., A);
    a total that rounds to 1 counts as the largest float below 1 (finite: -36.7), so that a draw
    of both classes with all their mass on the atoms gives a map, not 0 / 0, off them."""
    return np.log1p(-np.clip(atom_prob.sum(axis=-1), 0.0, 1.0 - np.finfo(np.float64).epsneg))


def map_draws(
    t: np.ndarray,
    atoms_t: np.ndarray,
    pi: np.ndarray,
    weight: np.ndarray,
    p1: np.ndarray,
    p2: np.ndarray,
    atom_prob: np.ndarray,
    family: str = "gaussian",
) -> np.ndarray:
    """Calibration-map draws P(y=1 | t), shape ``(S, n)``, atoms included: the logistic
    function of the difference of the two classes' :func:`log_joint`."""
    lj = log_joint(t, atoms_t, pi, weight, p1, p2, atom_prob, family)
    return expit(lj[:, 1] - lj[:, 0])
