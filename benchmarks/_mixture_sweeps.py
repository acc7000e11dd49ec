"""Pieces of the blocked Gibbs sweeps (Ishwaran & James 2001) that the component-kernel studies
(``student_t_study.py``, ``skew_normal_study.py``) share with each other: the stick-breaking
weights, the split of a bin's units over the components, the sticks' and concentration's
conditionals, a component drawn from the calibrator's prior, the set-up of a class's chains
from the calibrator's prior dict, and the mixtures' log densities summed over components in
chunks of draws. Compiled with numba; the arithmetic and the order of the random
draws are those of the calibrator's own sweeps (:mod:`bayescal.bayesian._gibbs_kernels`)."""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import xarray as xr
from numba import njit

from bayescal.bayesian._gibbs_kernels import binomial
from bayescal.bayesian.gibbs import _chain_streams, _log_floor, _start_above_floor, default_thin, start_sticks


@njit(cache=True, nogil=True)
def stick_log_weights(v, logw):
    """Fill ``logw`` (K) with the log stick-breaking weights of the K - 1 sticks ``v``."""
    K = logw.size
    rest = 0.0
    for k in range(K - 1):
        logw[k] = math.log(v[k]) + rest
        rest += math.log1p(-v[k])
    logw[K - 1] = rest


@njit(cache=True, nogil=True)
def exp_normalise(p):
    """Replace the log terms ``p`` by ``exp(p - max p)`` and return their sum."""
    top = -np.inf
    for k in range(p.size):
        top = max(top, p[k])
    tot = 0.0
    for k in range(p.size):
        p[k] = math.exp(p[k] - top)
        tot += p[k]
    return tot


@njit(cache=True, nogil=True)
def split_units(gen, left, p, tot, nik):
    """Split ``left`` units over the components in proportion to ``p`` (summing to ``tot``) by
    successive binomials, into ``nik`` (K integers)."""
    mass = tot
    nik[:] = 0
    for k in range(p.size):
        if left == 0:
            break
        if k == p.size - 1 or p[k] >= mass:
            n = left
        elif p[k] <= 0.0:
            n = 0
        else:
            n = binomial(gen, left, p[k] / mass)
        mass -= p[k]
        left -= n
        nik[k] = n


@njit(cache=True, nogil=True)
def pick_component(gen, p, tot):
    """One component drawn in proportion to ``p`` (summing to ``tot``)."""
    r, k = gen.random() * tot, 0
    while k < p.size - 1 and r > p[k]:
        r -= p[k]
        k += 1
    return k


@njit(cache=True, nogil=True)
def sticks_and_concentration(v, nk, alpha, a_alpha, b_alpha, gen):
    """Draw the sticks ``v`` (in place, from the last component back) given the units ``nk`` per
    component and concentration ``alpha``, then return a new concentration given the sticks
    (Gamma(a_alpha, b_alpha) prior)."""
    K = nk.size
    after = 0.0
    log_rest = 0.0
    for k in range(K - 1, -1, -1):
        if k < K - 1:
            v[k] = min(max(gen.beta(1.0 + nk[k], alpha + after), 1e-12), 1.0 - 1e-12)
            log_rest += math.log1p(-v[k])
        after += nk[k]
    return gen.gamma(a_alpha + K - 1, 1.0 / (b_alpha - log_rest))


@njit(cache=True, nogil=True)
def prior_location_scale(m_k, s2, ell, tau, log_floor, gen):
    """A component's location and log scale from the calibrator's prior: N(m_k, s2) and
    N(ell, tau^2) above ``log_floor`` (by rejection, at most 1000 tries)."""
    mu = m_k + math.sqrt(s2) * gen.standard_normal()
    draw = ell + tau * gen.standard_normal()
    tries = 0
    while draw < log_floor and tries < 1000:
        draw = ell + tau * gen.standard_normal()
        tries += 1
    return mu, max(draw, log_floor)


@njit(cache=True, nogil=True)
def stick_weights(v, out):
    """Fill ``out`` (K) with the stick-breaking weights of the sticks ``v``."""
    rest = 0.0
    for k in range(out.size - 1):
        out[k] = v[k] * math.exp(rest)
        rest += math.log1p(-v[k])
    out[out.size - 1] = math.exp(rest)


def class_chains_setup(x: np.ndarray, counts: np.ndarray, prior: dict, tune: int, draws: int, n_mh: int) -> dict:
    """A class's data and the calibrator's prior as the studies' sweeps take them: the centring
    ``shift`` (weighted mean), ``data`` (centred points, integer counts, fractional remainders,
    centred prior means), ``s2, ell, tau, log_floor, a_alpha, b_alpha``, the start ``mu0, u0, v0``
    (the calibrator's, on the floor), its thinning ``thin``, ``run`` = (tune, thin, draws, n_mh)
    as the sweeps take them and ``n_iterations``, the sweeps a chain runs."""
    x, counts = np.asarray(x, dtype=np.float64), np.asarray(counts, dtype=np.float64)
    shift = float(np.average(x, weights=counts))
    log_floor = _log_floor(prior)
    c_int = np.floor(counts)
    mu0, u0 = _start_above_floor(
        "gaussian",
        np.asarray(prior["init_mu"], np.float64) - shift,
        np.log(np.asarray(prior["init_sigma"], np.float64)),
        log_floor,
    )
    thin = default_thin(counts.sum())
    return {
        "shift": shift,
        "data": (x - shift, c_int.astype(np.int64), counts - c_int, np.asarray(prior["mu_loc"], np.float64) - shift),
        "s2": float(prior["mu_scale"]) ** 2,
        "ell": float(prior["sigma_logmean"]),
        "tau": float(prior["sigma_logsd"]),
        "log_floor": log_floor,
        "a_alpha": float(prior["alpha_shape"]),
        "b_alpha": float(prior["alpha_rate"]),
        "mu0": mu0,
        "u0": u0,
        "v0": start_sticks(prior["init_weight"]),
        "thin": thin,
        "run": (int(tune), thin, int(draws), int(n_mh)),
        "n_iterations": int(tune) + int(draws) * thin,
    }


def run_chains(chain: Callable[[np.random.Generator], tuple], chains: int, random_seed) -> list[tuple]:
    """``chain(gen)`` for each of ``chains`` generators spawned from ``random_seed``, run in threads."""
    gens = _chain_streams(random_seed, chains)
    with ThreadPoolExecutor(max_workers=min(chains, os.cpu_count() or 1)) as pool:
        return list(pool.map(chain, gens))


def class_posterior(weight: np.ndarray, mu: np.ndarray, sigma: np.ndarray, alpha: np.ndarray) -> xr.Dataset:
    """A class's posterior in the route layout (:class:`bayescal.bayesian.class_fit.ClassFit`):
    ``weight``, ``mu``, ``sigma`` of dims (chain, draw, component) and ``alpha`` (chain, draw)."""
    chains, draws, K = weight.shape
    dims = ("chain", "draw", "component")
    return xr.Dataset(
        {"weight": (dims, weight), "mu": (dims, mu), "sigma": (dims, sigma), "alpha": (("chain", "draw"), alpha)},
        coords={"chain": np.arange(chains), "draw": np.arange(draws), "component": np.arange(K)},
    )


def chunked_mixture_logsumexp(rows: int, K: int, n_points: int, log_terms: Callable[[slice], np.ndarray]) -> np.ndarray:
    """log sum_k exp(log_terms(rows)[:, k, :]) for ``rows`` mixtures of ``K`` components at
    ``n_points`` points, shape (rows, n_points): ``log_terms(sl)`` gives the (rows in sl, K,
    n_points) terms log w_k + log f_k(t), evaluated in chunks of rows of at most 2^22 terms."""
    out = np.empty((rows, n_points))
    step = max(1, 2**22 // max(K * n_points, 1))
    with np.errstate(divide="ignore"):
        for r in range(0, rows, step):
            sl = slice(r, r + step)
            terms = log_terms(sl)
            top = terms.max(axis=1)
            out[sl] = top + np.log(np.exp(terms - top[:, None, :]).sum(axis=1))
    return out
