r"""Numpy evaluation of mixture densities and calibration maps from posterior draws.

Every inference route returns the same draws (weights :math:`w_{ck}`, means
:math:`\mu_{ck}`, scales :math:`\sigma_{ck}`, class prior :math:`\pi`, atom masses
:math:`q_{ca}`), so this module is the single place where they turn into densities and maps.

Continuous part of class :math:`c` on the working scale:

.. math:: \log f_c(t) = \operatorname{logsumexp}_k \big[\log w_{ck} + \log \mathcal N(t \mid \mu_{ck}, \sigma_{ck})\big]

The map away from atoms, with :math:`Q_c = \sum_a q_{ca}` the atom mass of class c,

.. math::
    P(y=1 \mid t) = \operatorname{expit}\Big(\log\tfrac{\pi}{1-\pi}
        + \log(1 - Q_1) + \log f_1(t) - \log(1 - Q_0) - \log f_0(t)\Big),

computed from log densities so that far in the tails, where both densities underflow,
the ratio stays finite (never 0/0). At an atom value :math:`a` the point masses dominate
any density, so :math:`P(y=1 \mid a) = \pi q_{1a} / (\pi q_{1a} + (1-\pi) q_{0a})`.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit

__all__ = ["atom_map", "log_density", "log_odds_continuous", "map_draws"]

_LOG_SQRT_2PI = 0.5 * np.log(2.0 * np.pi)
_CHUNK_ELEMENTS = 2**20  # draws x components x points evaluated at once (8 MB of float64)
_TINY = 1e-250  # below this a directly summed density is recomputed in log space
_T_FAR = 1e150  # |t| beyond this is clipped: its squared z-score would overflow, and the map's
#                 far-tail limit (set by the widest component) is reached long before


def log_density(t: np.ndarray, weight: np.ndarray, mu: np.ndarray, sigma: np.ndarray) -> np.ndarray:
    r"""Log density of Gaussian mixtures at points ``t``, one mixture per leading index.

    Parameters
    ----------
    t : ndarray of shape (n,)
        Working-scale points.
    weight, mu, sigma : ndarray of shape (..., K)
        Mixture weights (summing to one over the last axis), means and scales.

    Returns
    -------
    ndarray of shape (..., n)
        :math:`\log \sum_k w_k \mathcal N(t \mid \mu_k, \sigma_k)`, evaluated in chunks of
        draws so memory stays bounded: summed directly where that is exact, and by
        log-sum-exp where the direct sum underflows (far tails), so it is finite everywhere
        (points beyond +-1e150 are evaluated at +-1e150, where the squared z-score still fits
        in a float).
    """
    t = np.clip(np.asarray(t, dtype=np.float64), -_T_FAR, _T_FAR)
    lead = weight.shape[:-1]
    K = weight.shape[-1]
    w2, m2, s2 = (np.asarray(a, dtype=np.float64).reshape(-1, K) for a in (weight, mu, sigma))
    with np.errstate(divide="ignore"):
        const = np.log(w2) - np.log(s2) - _LOG_SQRT_2PI  # (S, K)
    inv_s = 1.0 / s2
    out = np.empty((w2.shape[0], t.size))
    step = max(1, _CHUNK_ELEMENTS // max(1, K * t.size))
    for start in range(0, w2.shape[0], step):
        sl = slice(start, start + step)
        comp = (t[None, None, :] - m2[sl, :, None]) * inv_s[sl, :, None]
        comp *= comp
        comp *= -0.5
        comp += const[sl, :, None]
        np.exp(comp, out=comp)
        out[sl] = comp.sum(axis=1)
    # the direct sum is exact unless it underflows (far tails): redo those points in log space
    small = out < _TINY
    with np.errstate(divide="ignore"):
        np.log(out, out=out)
    rows, cols = np.nonzero(small)
    for start in range(0, rows.size, max(1, _CHUNK_ELEMENTS // K)):
        r, c = rows[start:start + _CHUNK_ELEMENTS // K], cols[start:start + _CHUNK_ELEMENTS // K]
        comp = (t[c, None] - m2[r]) * inv_s[r]
        comp = -0.5 * comp * comp + const[r]
        top = comp.max(axis=1, keepdims=True)
        out[r, c] = np.log(np.exp(comp - top).sum(axis=1)) + top[:, 0]
    return out.reshape(*lead, t.size)


def log_odds_continuous(t: np.ndarray, pi: np.ndarray, weight: np.ndarray, mu: np.ndarray,
                        sigma: np.ndarray, atom_prob: np.ndarray) -> np.ndarray:
    r"""Posterior log odds of y = 1 at non-atom points, per draw.

    Parameters
    ----------
    t : ndarray of shape (n,)
    pi : ndarray of shape (S,)
        Class-1 prior per draw.
    weight, mu, sigma : ndarray of shape (S, 2, K)
        Mixture parameters per draw and class.
    atom_prob : ndarray of shape (S, 2, A)
        Atom masses within each class (A may be 0).

    Returns
    -------
    ndarray of shape (S, n)
    """
    logf = log_density(t, weight, mu, sigma)  # (S, 2, n)
    cont = np.log1p(-np.clip(atom_prob.sum(axis=-1), 0.0, 1.0 - 1e-300))  # (S, 2)
    base = np.log(pi) - np.log1p(-pi) + cont[:, 1] - cont[:, 0]
    return base[:, None] + logf[:, 1] - logf[:, 0]


def atom_map(pi: np.ndarray, atom_prob: np.ndarray) -> np.ndarray:
    r"""P(y=1) at each atom value per draw: :math:`\pi q_{1a} / (\pi q_{1a} + (1-\pi) q_{0a})`.

    Parameters
    ----------
    pi : ndarray of shape (S,)
    atom_prob : ndarray of shape (S, 2, A)

    Returns
    -------
    ndarray of shape (S, A)
    """
    with np.errstate(divide="ignore"):
        lo = (np.log(pi)[:, None] + np.log(atom_prob[:, 1]) - np.log1p(-pi)[:, None] - np.log(atom_prob[:, 0]))
    return expit(lo)


def map_draws(t: np.ndarray, atoms_t: np.ndarray, pi: np.ndarray, weight: np.ndarray, mu: np.ndarray,
              sigma: np.ndarray, atom_prob: np.ndarray) -> np.ndarray:
    """Calibration-map draws P(y=1 | t), shape ``(S, n)``, atoms included.

    Points of ``t`` equal to an entry of ``atoms_t`` (atom values on the working scale)
    take :func:`atom_map`; the others :func:`log_odds_continuous` through the logistic function.
    """
    t = np.asarray(t, dtype=np.float64)
    out = np.empty((pi.shape[0], t.size))
    idx = np.full(t.size, -1)
    for j, a in enumerate(np.asarray(atoms_t, dtype=np.float64)):
        idx[t == a] = j
    cont = idx < 0
    if cont.any():
        out[:, cont] = expit(log_odds_continuous(t[cont], pi, weight, mu, sigma, atom_prob))
    if (~cont).any():
        out[:, ~cont] = atom_map(pi, atom_prob)[:, idx[~cont]]
    return out
