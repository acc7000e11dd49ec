r"""Study of the sampler's budget: Hamiltonian moves alone, with the allocations summed out.

Why. The calibrator's chains miss R-hat <= 1.01 and ESS >= 400 from 10^3 scores on. Its
Hamiltonian moves (``route_options={"hmc_steps": 20}``) mix far better than its sweeps, and
their cost is the gradient of the class's log-likelihood with the allocations summed out
(:func:`bayescal.bayesian._gibbs_kernels.marginal_logpost`, one pass over the points and the
components). This study asks what those moves need, alone, to meet the bar: how many
gradients, hence how long a fit, and whether a dense mass matrix (the posterior's correlations,
such as two components trading mass, learnt in the warm-up) lowers that need.

Sampler (research code, registered as ``inference="hmc"`` in this process only). For each class
and component family, ``chains`` chains of Hamiltonian Monte Carlo (Neal 2011) on the sticks'
logits and the components' parameters (the layout of
:func:`~bayescal.bayesian._gibbs_kernels.marginal_logpost`), ``steps`` leapfrog steps a move,
one move a draw, no sweeps. The concentration is held at its prior mean a / b (the default prior
Gamma(1000, 1000) has standard deviation 0.03; the calibrator's sampler draws it). Warm-up of
``tune`` moves as in Stan: the step size by dual averaging to a mean acceptance of 0.7 (Hoffman
& Gelman 2014) throughout, each move's step jittered by up to 20 % (:data:`JITTER`); the mass
from the positions of three growing windows (15-25 %, 25-45 % and 45-90 % of the warm-up), each
estimate regularised towards 10^-3 as in Stan and used from the end of its window;
``--mass diag`` keeps the positions' variances, ``--mass dense`` their covariance. The chains
start where the calibrator's do (its prior's ``init_*`` values, or the posterior mode above
:data:`bayescal.bayesian.gibbs.MODE_START_UNITS` units) and run in two threads. A move costs
``steps`` + 1 gradients, so a class's fit costs ``chains`` x (``tune`` + ``draws``) x
(``steps`` + 1) of them, per component family (the study fits both families in full with
``components="select"``, then keeps one, as the calibrator does for the routes without
stretches).

``--ridge R`` adds, after each move, R slice-sampling updates of how a pair of components shares
its weight (:func:`ridge_slice`: a component drawn at random and its nearest in location and log
scale), the direction along which two alike components trade a class's mass. Measured at 10^4
(monotone, piles, plateau, heavy; seeds 0-2, R = 3): the worst R-hat was lower than without them
in 2 of 12 fits, at twice the time, so that direction alone is not what holds the chains back.

Rows are the coverage study's (:func:`dpm_coverage.run_one`, the KDE calibrator as the other),
their ``route`` the configuration; the table sets each beside the default calibrator's rows on
the same seeds (:func:`_study_files.paired_table`), with the map's worst R-hat and lowest bulk
ESS over the data region and the fits meeting the bar.

Usage (one configuration a run; each appends its rows and its command to the table's file)::

    python benchmarks/hmc_only_study.py --truths monotone piles plateau heavy --n 1000 10000 --seeds 4 --mass diag
    python benchmarks/hmc_only_study.py --truths monotone piles plateau heavy --n 1000 10000 --seeds 4 --mass dense
    python benchmarks/hmc_only_study.py --truths monotone piles plateau heavy --n 10000 --seeds 3 --ridge 3

Rows go to ``benchmarks/results/hmc_only_study.csv``; the table beside it, ``hmc_only_study.md``,
with every run's command, date and machine.

References
----------
Betancourt, M. (2017). A conceptual introduction to Hamiltonian Monte Carlo. arXiv:1701.02434.
Hoffman, M. D. & Gelman, A. (2014). The No-U-Turn sampler. JMLR 15, 1593-1623.
Neal, R. M. (2011). MCMC using Hamiltonian dynamics. Handbook of Markov Chain Monte Carlo, ch. 5.
"""

from __future__ import annotations

import math
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numba
import numpy as np
import xarray as xr

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _study_files import (
    CONVERGENCE_COLUMNS,
    command_line,
    finish_study,
    paired_table,
    register_route,
    run_replicates,
    study_parser,
)
from dpm_coverage import run_one

from bayescal.bayesian import _gibbs_kernels as kern
from bayescal.bayesian import gibbs
from bayescal.bayesian.class_fit import ClassFit

WINDOW_ENDS = (0.15, 0.25, 0.45, 0.90)
"""Fractions of the warm-up bounding its three mass windows (Stan's slow windows, each longer
than the last); the last tenth tunes the step size alone."""
TARGET_ACCEPT = 0.7
"""Mean acceptance probability the warm-up tunes the step size to."""
JITTER = 0.2
"""Each move's step size is the tuned one times U(1 - JITTER, 1 + JITTER) (Neal 2011, section
5.4.2.2), so that no trajectory length stays a multiple of a direction's period."""


@numba.njit(nogil=True)
def _velocity(p, chol, dense, minv, vel):  # pragma: no cover - compiled
    """``vel`` = M^-1 p and the kinetic energy p' M^-1 p / 2; M^-1 = chol chol' (dense) or diag(minv)."""
    if dense:
        t = chol.T @ p
        vel[:] = chol @ t
        return 0.5 * np.dot(t, t)
    kinetic = 0.0
    for d in range(p.shape[0]):
        vel[d] = minv[d] * p[d]
        kinetic += 0.5 * minv[d] * p[d] * p[d]
    return kinetic


@numba.njit(nogil=True)
def _sticks_from_weights(w, q):  # pragma: no cover - compiled
    """The sticks' logits ``q[:K - 1]`` of weights ``w`` (K,), and log |d q / d w| over w_0..w_{K-2}."""
    K = w.shape[0]
    used = 0.0
    log_jac = 0.0
    for i in range(K - 1):
        rest = max(1.0 - used, 1e-300)
        v = min(max(w[i] / rest, 1e-300), 1.0 - 1e-16)
        q[i] = math.log(v) - math.log1p(-v)
        log_jac += -math.log(v) - math.log1p(-v) - math.log(rest)
        used += w[i]
    return log_jac


@numba.njit(nogil=True)
def ridge_slice(
    family, xa, xb, c_all, q, alpha, m, s2, ell, tau, loc1, loc2, log_floor, j, k, gen, grad, E, top, tot, bits, R, w
):  # pragma: no cover - compiled
    r"""A slice-sampling update of how components ``j`` and ``k`` share their weight: with
    :math:`s = w_j + w_k` and the other weights and every component's parameters fixed,
    :math:`t = w_j / s` is drawn from its conditional posterior in the weights' coordinates
    (the log posterior at the sticks of the new weights plus the log Jacobian from weights to
    the sticks' logits), by slice sampling on (0, 1) with shrinkage from the whole interval
    (Neal 2003). Where the two components are alike, the likelihood barely depends on t, and one
    update can move the share across its range, which the sweeps and the Hamiltonian moves cover
    only by a random walk. ``q`` is updated in place; returns the number of evaluations."""
    K = w.shape[0]
    used = 0.0
    for i in range(K - 1):
        v = 1.0 / (1.0 + math.exp(-q[i]))
        w[i] = (1.0 - used) * v
        used += w[i]
    w[K - 1] = max(1.0 - used, 0.0)
    total = w[j] + w[k]
    if total <= 1e-300:
        return 0
    t0 = w[j] / total
    log_jac = _sticks_from_weights(w, q)
    log_f0 = log_jac + kern.marginal_logpost(
        family, xa, xb, c_all, q, alpha, m, s2, ell, tau, loc1, loc2, log_floor, grad, E, top, tot, bits, R
    )
    level = log_f0 + math.log(gen.random())
    lo, hi = 0.0, 1.0
    q_old = q[: K - 1].copy()
    evaluations = 1
    while True:
        t = lo + (hi - lo) * gen.random()
        t = min(max(t, 1e-12), 1.0 - 1e-12)
        w[j] = t * total
        w[k] = (1.0 - t) * total
        log_jac = _sticks_from_weights(w, q)
        value = kern.marginal_logpost(
            family, xa, xb, c_all, q, alpha, m, s2, ell, tau, loc1, loc2, log_floor, grad, E, top, tot, bits, R
        )
        log_f = value + log_jac
        evaluations += 1
        if log_f >= level:
            return evaluations
        if t < t0:
            lo = t
        else:
            hi = t
        if hi - lo < 1e-12 or evaluations > 60:
            q[: K - 1] = q_old  # the interval shrank onto the current point: stay
            return evaluations


# fmt: off
@numba.njit(nogil=True)
def hmc_chain(
    family, xa, xb, c_all, q, alpha, m, s2, ell, tau, loc1, loc2, log_floor, n_warm, n_draw, steps, dense, gen, out,
    ridge,
):  # pragma: no cover - compiled
    # fmt: on
    """One chain of ``n_warm`` warm-up and ``n_draw`` kept moves from ``q`` (updated in place) with
    the generator ``gen``, the kept positions in ``out`` (n_draw, 3K - 1); returns the final step
    size, the mean acceptance of the kept moves (module docstring) and the log posterior evaluations
    of the ridge updates: with ``ridge`` > 0 each move is followed by that many :func:`ridge_slice`
    updates of pairs of alike components."""
    K = m.shape[0]
    n = xa.shape[0]
    D = 3 * K - 1
    E = np.empty((K, n))
    top = np.empty(n)
    tot = np.empty(n)
    bits = np.empty(n * K, dtype=np.int64)
    R = np.empty(K)
    grad = np.empty(D)
    q0 = np.empty(D)
    p = np.empty(D)
    vel = np.empty(D)
    minv = np.ones(D)
    chol = np.eye(D)
    # a first mass: the conditional variances at the start, as the calibrator's sampler
    kern.first_inverse_mass(
        family, xa, xb, c_all, q, alpha, m, s2, ell, tau, loc1, loc2, log_floor, grad, E, top, tot, bits, R, minv
    )
    for d in range(D):
        chol[d, d] = math.sqrt(minv[d])
    eps = 0.1
    da_mu = math.log(10.0 * eps)
    da_n = 0.0
    h_bar = 0.0
    log_eps_bar = 0.0
    ends = np.array([int(f * n_warm) for f in WINDOW_ENDS])
    w_sum = np.zeros(D)
    w_cross = np.zeros((D, D))
    w_n = 0.0
    accepted = 0.0
    grad0 = np.empty(D)
    w_work = np.empty(K)
    ridge_evaluations = 0
    value = kern.marginal_logpost(
        family, xa, xb, c_all, q, alpha, m, s2, ell, tau, loc1, loc2, log_floor, grad, E, top, tot, bits, R
    )
    for it in range(n_warm + n_draw):
        # value and grad are at q: the previous move's end, or its start when it was rejected
        q0[:] = q
        value0 = value
        grad0[:] = grad
        z = np.empty(D)
        for d in range(D):
            z[d] = gen.standard_normal()
        if dense:
            p[:] = np.linalg.solve(chol.T, z)
        else:
            for d in range(D):
                p[d] = z[d] / math.sqrt(minv[d])
        h0 = -value + _velocity(p, chol, dense, minv, vel)
        step_size = eps * (1.0 + JITTER * (2.0 * gen.random() - 1.0))
        p += 0.5 * step_size * grad
        for step in range(steps):
            _velocity(p, chol, dense, minv, vel)
            q += step_size * vel
            value = kern.marginal_logpost(
                family, xa, xb, c_all, q, alpha, m, s2, ell, tau, loc1, loc2, log_floor, grad, E, top, tot, bits, R
            )
            if not value > -np.inf or value != value:
                break  # diverged or below the floor: rejected below
            p += (step_size if step < steps - 1 else 0.5 * step_size) * grad
        delta = h0 - (-value + _velocity(p, chol, dense, minv, vel))
        accept = math.exp(min(delta, 0.0)) if delta == delta and value > -np.inf else 0.0
        if not gen.random() < accept:
            q[:] = q0
            value = value0
            grad[:] = grad0
        if ridge > 0:
            for _ in range(ridge):
                j = int(gen.integers(0, K))
                k = -1  # its nearest component in (location, log scale): the pair most alike
                best = np.inf
                for i in range(K):
                    if i != j:
                        d = (q[K - 1 + i] - q[K - 1 + j]) ** 2 + (q[2 * K - 1 + i] - q[2 * K - 1 + j]) ** 2
                        if d < best:
                            best = d
                            k = i
                ridge_evaluations += ridge_slice(
                    family, xa, xb, c_all, q, alpha, m, s2, ell, tau, loc1, loc2, log_floor, min(j, k), max(j, k),
                    gen, grad, E, top, tot, bits, R, w_work,
                )  # fmt: skip
            value = kern.marginal_logpost(
                family, xa, xb, c_all, q, alpha, m, s2, ell, tau, loc1, loc2, log_floor, grad, E, top, tot, bits, R
            )
        if it >= n_warm:
            accepted += accept
            out[it - n_warm, :] = q
            continue
        da_n += 1.0
        h_bar += (TARGET_ACCEPT - accept - h_bar) / (da_n + 10.0)
        log_eps = da_mu - math.sqrt(da_n) / 0.05 * h_bar
        decay = da_n**-0.75
        log_eps_bar = decay * log_eps + (1.0 - decay) * log_eps_bar
        eps = math.exp(log_eps)
        if ends[0] <= it < ends[3]:
            w_n += 1.0
            w_sum += q
            w_cross += np.outer(q, q)
            if (it + 1 == ends[1] or it + 1 == ends[2] or it + 1 == ends[3]) and w_n > 2.0:
                mean = w_sum / w_n
                cov = (w_cross / w_n - np.outer(mean, mean)) * (w_n / (w_n - 1.0)) * (w_n / (w_n + 5.0))
                for d in range(D):
                    cov[d, d] += 1e-3 * 5.0 / (w_n + 5.0)
                    minv[d] = cov[d, d]
                if dense:
                    chol[:, :] = np.linalg.cholesky(cov)
                w_sum[:] = 0.0
                w_cross[:, :] = 0.0
                w_n = 0.0
                da_mu = math.log(10.0 * eps)
                da_n = 0.0
                h_bar = 0.0
                log_eps_bar = 0.0
        if it == n_warm - 1:
            eps = math.exp(log_eps_bar)
    return eps, accepted / max(n_draw, 1), ridge_evaluations


def fit_hmc(
    x: np.ndarray,
    counts: np.ndarray,
    prior: dict,
    *,
    n_components: int,
    random_seed: int | None,
    draws: int = 500,
    tune: int = 1000,
    chains: int = 4,
    steps: int = 20,
    mass: str = "diag",
    ridge: int = 0,
    family: str = "gaussian",
) -> ClassFit:
    """One class's mixture by Hamiltonian moves alone (module docstring), as an inference route."""
    t0 = time.perf_counter()
    K = int(n_components)
    at_mode = float(np.sum(counts)) > gibbs.MODE_START_UNITS
    code, (xa, xb, counts), hyper, start, alpha, shift = class_setup(x, counts, prior, K, family, at_mode)
    m, s2, ell, tau, loc1, loc2, log_floor = hyper
    gens = [np.random.default_rng(s) for s in np.random.SeedSequence(random_seed).spawn(chains)]
    outs = np.empty((chains, draws, 3 * K - 1))

    def run(c: int):
        return hmc_chain(
            code, xa, xb, counts, start.copy(), alpha, m, s2, ell, tau, loc1, loc2, log_floor, int(tune), int(draws),
            int(steps), mass == "dense", gens[c], outs[c], int(ridge),
        )  # fmt: skip

    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(run, range(chains)))
    posterior = posterior_of_positions(outs, family, shift, alpha)
    diagnostics = {
        "route": "hmc",
        "family": family,
        "runtime_s": time.perf_counter() - t0,
        "gradients": chains * (tune + draws) * (steps + 1) + int(sum(r[2] for r in results)),
        "hmc_acceptance": float(np.mean([r[1] for r in results])),
        "step_size": float(np.mean([r[0] for r in results])),
    }
    return ClassFit(posterior=posterior, diagnostics=diagnostics)


def class_setup(x: np.ndarray, counts: np.ndarray, prior: dict, K: int, family: str, at_mode: bool) -> tuple:
    """What a route on :func:`~bayescal.bayesian._gibbs_kernels.marginal_logpost` needs for one class:
    the family's code; the points with positive counts as the kernel takes them (``xa, xb, counts``);
    the prior's arrays ``(m, s2, ell, tau, loc1, loc2, log_floor)``; the start in the kernel's layout
    (the prior's ``init_*`` values raised onto the floor, or with ``at_mode`` the posterior mode of
    :func:`~bayescal.bayesian.mode_start.mode_start`); the concentration at its prior mean; and the
    centre of the Gaussian means."""
    x, counts = np.asarray(x, dtype=float), np.asarray(counts, dtype=float)
    keep = counts > 0
    x, counts = x[keep], counts[keep]
    if at_mode:
        from bayescal.bayesian.mode_start import mode_start

        prior = mode_start(x, counts, prior, family)
    (xa, xb), (m, s2, ell, tau, loc1, loc2), (th1, th2), shift = gibbs._family_arrays(x, counts, prior, K, family)
    log_floor = gibbs._log_floor(prior)
    th1, th2 = gibbs._start_above_floor(family, th1, th2, log_floor)
    v0 = gibbs.start_sticks(prior["init_weight"])
    start = np.concatenate([np.log(v0) - np.log1p(-v0), th1, th2])
    alpha = float(prior["alpha_shape"]) / float(prior["alpha_rate"])
    code = kern.GAUSSIAN if family == "gaussian" else kern.BETA
    return code, (xa, xb, counts), (m, s2, ell, tau, loc1, loc2, log_floor), start, alpha, shift


def posterior_of_positions(q: np.ndarray, family: str, shift: float, alpha: float) -> xr.Dataset:
    """The calibrator's posterior layout (weights, the family's two parameters, the concentration
    ``alpha``, per chain, draw and component) of positions ``q`` (chains, draws, 3K - 1) in
    :func:`~bayescal.bayesian._gibbs_kernels.marginal_logpost`'s layout, whose Gaussian means are
    centred at ``shift``."""
    chains, draws, D = q.shape
    K = (D + 1) // 3
    v = 1.0 / (1.0 + np.exp(-q[..., : K - 1].reshape(chains * draws, K - 1)))
    weight = np.exp(gibbs._log_weights(v)).reshape(chains, draws, K)
    t1, t2 = q[..., K - 1 : 2 * K - 1], q[..., 2 * K - 1 :]
    p1, p2 = (t1 + shift, np.exp(t2)) if family == "gaussian" else (np.exp(t1), np.exp(t2))
    name1, name2 = gibbs._FAMILIES[family].names
    dims = ("chain", "draw", "component")
    return xr.Dataset(
        {"weight": (dims, weight), name1: (dims, p1), name2: (dims, p2)}
        | {"alpha": (("chain", "draw"), np.full((chains, draws), alpha))},
        coords={"chain": np.arange(chains), "draw": np.arange(draws), "component": np.arange(K)},
    )


def register() -> None:
    """Make ``inference="hmc"`` fit with :func:`fit_hmc` in this process, both component families."""
    register_route("hmc", fit_hmc)


def compile_chain() -> None:
    """Compile :func:`hmc_chain` (one signature for both families and masses) before a study's fits
    are timed: a tiny chain on three points."""
    K = 2
    x = np.array([-1.0, 0.0, 1.0])
    zeros = np.zeros(K)
    hmc_chain(
        kern.GAUSSIAN, x, x, np.ones(3), np.zeros(3 * K - 1), 1.0, zeros, 1.0, 0.0, 1.0, zeros, zeros, -np.inf, 40, 1,
        2, False, np.random.default_rng(0), np.empty((1, 3 * K - 1)), 1,
    )  # fmt: skip


def label(mass: str, chains: int, draws: int, tune: int, steps: int, ridge: int = 0) -> str:
    """The ``route`` of a configuration's rows."""
    if ridge:
        return f"hmc alone ({mass} mass, {chains} x {draws} draws, tune {tune}, {steps} steps, {ridge} ridge slices)"
    return f"hmc alone ({mass} mass, {chains} x {draws} draws, tune {tune}, {steps} steps)"


def main() -> None:
    ap = study_parser(__doc__, "hmc_only_study.py", n=(1000, 10000), seeds=4)
    ap.add_argument("--mass", default="diag", choices=["diag", "dense"])
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--draws", type=int, default=500, help="kept draws per chain")
    ap.add_argument("--tune", type=int, default=1000, help="warm-up moves per chain")
    ap.add_argument("--steps", type=int, default=20, help="leapfrog steps a move")
    ap.add_argument("--ridge", type=int, default=0, help="weight-share slice updates of pairs of alike components a move")
    args = ap.parse_args()
    register()
    compile_chain()
    options = {"route_options": {k: getattr(args, k) for k in ("mass", "chains", "draws", "tune", "steps", "ridge")}}
    route = label(args.mass, args.chains, args.draws, args.tune, args.steps, args.ridge)

    def one_row(truth: str, n: int, seed: int) -> dict:
        return run_one(truth, n, seed, "hmc", options, ["kde"]) | {"route": route}

    run_replicates(args, one_row)
    command = command_line("hmc_only_study.py", args, ("mass", "chains", "draws", "tune", "steps", "ridge"))
    finish_study(
        args, "Hamiltonian moves alone against the default", command, lambda p: paired_table(p, CONVERGENCE_COLUMNS)
    )


if __name__ == "__main__":
    main()
