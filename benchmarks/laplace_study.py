r"""Study of a Laplace approximation of each class's mixture posterior at its mode, for large N.

Why. From 10^4 scores on no default fit meets R-hat <= 1.01 and ESS >= 400, and from 10^5 on
a fit takes 3-7 s, nearly all of it the sampler's Hamiltonian moves. There the posterior of a
class's mixture is concentrated: by the Bernstein-von Mises theorem it is close to a Gaussian
at its mode with the inverse of the log posterior's negative Hessian as covariance, as long as
the mode is well separated. Draws from that Gaussian are independent (so R-hat and ESS hold by
construction) and cost one mode search, one Hessian and a matrix product. What this study
measures is whether their band covers as the sampler's does, on the coverage study's truths
at 10^4 to 10^7 scores: a mixture has many modes, overlapping components make the Hessian
nearly singular along the ridges where they trade mass, and the Gaussian ignores both.

Approximation (research code, registered as ``inference="laplace"`` in this process only). For
each class and component family, on the sampler's parameters (the sticks' logits and the
components' centred means and log scales, or log shapes; the layout of
:func:`~bayescal.bayesian._gibbs_kernels.marginal_logpost`, the class's log posterior with the
allocations summed out and the concentration held at its prior mean):

1. the mode :math:`\hat q`: L-BFGS on that log posterior with its analytic gradient, started
   from :func:`~bayescal.bayesian.mode_start.mode_start` (the sampler's start above
   :data:`~bayescal.bayesian.gibbs.MODE_START_UNITS` units), Gaussian scales bounded below by
   the components' floor;
2. the Hessian :math:`H` at :math:`\hat q` by central differences of the gradient, symmetrised;
   over the sticks and the parameters of the components that hold at least
   :data:`ACTIVE_UNITS` units there and are not on the floor (the others stay at the mode);
   its eigenvalues are taken in absolute value (a search that stops at a saddle, not a mode, has
   negative ones; counted) and those below :data:`EIG_FLOOR` times the largest raised to that
   (counted: directions the data and the prior leave flat);
3. ``chains`` x ``draws`` draws :math:`q = \hat q + s V \Lambda^{-1/2} z`, :math:`z \sim N(0, I)`,
   :math:`s` = ``spread`` (1; 0 puts every draw at the mode, to see the mode's own map);
   a draw below the components' floor is moved onto it (counted);
4. the Pareto k-hat of the importance ratios :math:`\log p(q) - \log N(q; \hat q, -H^{-1})`
   of the draws (Vehtari et al. 2024) says how far the Gaussian is from the posterior.

Rows are the coverage study's (:func:`dpm_coverage.run_one`, the KDE calibrator as the other),
their ``route`` the configuration; the table sets each beside the default calibrator's rows on
the same seeds (:func:`_study_files.paired_table`), with the map's worst R-hat and lowest bulk
ESS over the data region and the fits meeting the bar.

Findings (2026-12-02, monotone, piles and plateau truths at 10^4, 10^5 and 10^6 scores, 3 seeds
a cell, Gaussian components; ``benchmarks/results/laplace_study.md``). Rejected. The draws are
independent (worst R-hat 1.002-1.005, lowest bulk ESS 1,600-1,900 of 2,000) and a fit takes
1.3-3.4 s, but the band is unusable: its error is 4-250 times the default calibrator's (monotone
0.020 / 0.026 / 0.150 against 0.0046 / 0.0014 / 0.0006) and it is 9-90 times as wide. The
Gaussian is far from the posterior: the importance ratios' Pareto k-hat is 20-85 at 10^4, and
from 10^5 on the search stops at a saddle (1-10 directions of negative curvature), not a mode,
after 1,000-2,000 L-BFGS iterations. Even the mode's own map (``--spread 0``) has 1.1-3.4 times
the default's error at 10^4 and 10^5 (monotone 0.0105 / 0.0046), so a better Gaussian at it
would not do either. The overlapping components that slow the sampler leave the posterior
with ridges and many modes, which no single Gaussian describes.

Usage::

    python benchmarks/laplace_study.py --truths monotone piles plateau --n 100000 1000000 --seeds 8

Rows go to ``benchmarks/results/laplace_study.csv``; the table beside it, ``laplace_study.md``,
with every run's command, date and machine.

References
----------
Kass, R. E., Tierney, L. & Kadane, J. B. (1990). The validity of posterior expansions based on
Laplace's method. In Bayesian and Likelihood Methods in Statistics and Econometrics, 473-488.
Vehtari, A., Simpson, D., Gelman, A., Yao, Y. & Gabry, J. (2024). Pareto smoothed importance
sampling. JMLR 25(72), 1-58.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numba
import numpy as np
from scipy.optimize import minimize

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
from hmc_only_study import class_setup, posterior_of_positions

from bayescal.bayesian import _gibbs_kernels as kern
from bayescal.bayesian import gibbs
from bayescal.bayesian.class_fit import ClassFit

EIG_FLOOR = 1e-10
"""Smallest eigenvalue of the negative Hessian, relative to its largest, that the draws use."""
ACTIVE_UNITS = 1.0
"""Fewest units (expected under the mode's responsibilities) of a component whose parameters are drawn;
the parameters of emptier components stay at the mode, where only their prior holds them."""
MODE_MAX_ITER = 2000
"""Most L-BFGS iterations of the mode search on the full log posterior."""


@numba.njit(nogil=True)
def log_posterior(code, xa, xb, c, q, alpha, m, s2, ell, tau, loc1, loc2, log_floor, grad, R):  # pragma: no cover
    """:func:`~bayescal.bayesian._gibbs_kernels.marginal_logpost` at ``q`` with its work arrays; the
    gradient into ``grad``, the components' expected unit totals into ``R``."""
    K = (q.shape[0] + 1) // 3
    n = xa.shape[0]
    E = np.empty((K, n))
    top = np.empty(n)
    tot = np.empty(n)
    bits = np.empty(K * n, dtype=np.int64)
    return kern.marginal_logpost(
        code, xa, xb, c, q, alpha, m, s2, ell, tau, loc1, loc2, log_floor, grad, E, top, tot, bits, R
    )


def fit_laplace(
    x: np.ndarray,
    counts: np.ndarray,
    prior: dict,
    *,
    n_components: int,
    random_seed: int | None,
    draws: int = 500,
    chains: int = 4,
    family: str = "gaussian",
    spread: float = 1.0,
) -> ClassFit:
    """One class's mixture by a Laplace approximation at its mode (module docstring), as an inference route."""
    t0 = time.perf_counter()
    K = int(n_components)
    code, (xa, xb, counts), hyper, start, alpha, shift = class_setup(x, counts, prior, K, family, at_mode=True)
    m, s2, ell, tau, loc1, loc2, log_floor = hyper
    D = start.size
    grad = np.empty(D)
    R = np.empty(K)

    def value_grad(q: np.ndarray) -> tuple[float, np.ndarray]:
        v = log_posterior(code, xa, xb, counts, q, alpha, m, s2, ell, tau, loc1, loc2, log_floor, grad, R)
        if not np.isfinite(v):
            return 1e300, np.zeros(D)
        return -v, -grad.copy()

    bounds = None
    if family == "gaussian" and np.isfinite(log_floor):
        bounds = [(None, None)] * (2 * K - 1) + [(log_floor, None)] * K
    with np.errstate(all="ignore"):
        result = minimize(
            value_grad, start, jac=True, method="L-BFGS-B", bounds=bounds, options={"maxiter": MODE_MAX_ITER}
        )
    mode = result.x if np.isfinite(result.fun) and result.fun <= value_grad(start)[0] else start
    # the coordinates drawn: the sticks, and the parameters of the components holding at least
    # ACTIVE_UNITS of the class's units whose scale is not on its floor; the others stay at the mode
    value_grad(mode)
    units = R.copy()  # the components' expected unit totals at the mode
    free = np.ones(D, dtype=bool)
    for k in range(K):
        on_floor = family == "gaussian" and mode[2 * K - 1 + k] <= log_floor + 1e-6
        if units[k] < ACTIVE_UNITS:
            free[[K - 1 + k, 2 * K - 1 + k]] = False
        elif on_floor:
            free[2 * K - 1 + k] = False
    idx = np.flatnonzero(free)
    # Hessian of the negative log posterior over those coordinates, by central differences of the gradient
    H = np.empty((idx.size, idx.size))
    for col, j in enumerate(idx):
        h = 1e-5 * max(1.0, abs(mode[j]))
        up, down = mode.copy(), mode.copy()
        up[j] += h
        down[j] -= h
        H[:, col] = (value_grad(up)[1][idx] - value_grad(down)[1][idx]) / (2 * h)
    H = 0.5 * (H + H.T)
    lam, V = np.linalg.eigh(H)
    floor = EIG_FLOOR * max(lam.max(), 1e-300)
    flat = int((lam < floor).sum())
    saddle = int((lam < 0).sum())
    lam = np.maximum(np.abs(lam), floor)
    rng = np.random.default_rng(random_seed)
    z = rng.standard_normal((chains * draws, idx.size))
    q = np.tile(mode, (chains * draws, 1))
    q[:, idx] += spread * (z / np.sqrt(lam)) @ V.T
    floored = 0
    if np.isfinite(log_floor):
        if family == "gaussian":
            low = q[:, 2 * K - 1 :] < log_floor
            floored = int(low.any(axis=1).sum())
            q[:, 2 * K - 1 :] = np.maximum(q[:, 2 * K - 1 :], log_floor)
        else:
            t1, t2 = gibbs._start_above_floor(family, q[:, K - 1 : 2 * K - 1], q[:, 2 * K - 1 :], log_floor)
            floored = int((t1 != q[:, K - 1 : 2 * K - 1]).any(axis=1).sum())
            q[:, K - 1 : 2 * K - 1], q[:, 2 * K - 1 :] = t1, t2
    # importance ratios of the draws: the log posterior against the Gaussian's log density
    log_p = np.array([-value_grad(qs)[0] for qs in q])
    log_q = -0.5 * (z * z).sum(axis=1)  # up to a constant, which the Pareto fit does not see
    k_hat = _pareto_k(log_p - log_q)
    posterior = posterior_of_positions(q.reshape(chains, draws, D), family, shift, alpha)
    diagnostics = {
        "route": "laplace",
        "family": family,
        "runtime_s": time.perf_counter() - t0,
        "mode_iterations": int(result.nit),
        "mode_converged": bool(result.success),
        "flat_directions": flat,
        "negative_curvatures": saddle,
        "active_components": int(np.sum(units >= ACTIVE_UNITS)),
        "draws_floored": floored,
        "pareto_k": k_hat,
    }
    return ClassFit(posterior=posterior, diagnostics=diagnostics)


def _pareto_k(log_ratios: np.ndarray) -> float:
    """Pareto k-hat of the importance ratios (arviz_stats' PSIS); draws outside the support count as
    the least likely; NaN with fewer than 100 draws in the support or all of them at one point."""
    from arviz_stats.base import array_stats

    ok = np.isfinite(log_ratios) & (log_ratios > -1e200)
    if ok.sum() < 100 or np.ptp(log_ratios[ok]) == 0.0:
        return float("nan")  # too few draws in the support, or all at one point, to fit a tail
    lr = np.where(ok, log_ratios, log_ratios[ok].min() - 1000.0)
    _, k = array_stats.psislw(-(lr - lr.max()))  # arviz_stats takes the negated log ratios, as loo does
    return float(np.asarray(k))


def register() -> None:
    """Make ``inference="laplace"`` fit with :func:`fit_laplace` in this process, both component families."""
    register_route("laplace", fit_laplace)


def label(chains: int, draws: int, spread: float) -> str:
    """The ``route`` of a configuration's rows."""
    scaled = "" if spread == 1.0 else f", deviations x {spread:g}"
    return f"laplace at the mode ({chains} x {draws} draws{scaled})"


def main() -> None:
    ap = study_parser(__doc__, "laplace_study.py", n=(100000, 1000000), seeds=8)
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--draws", type=int, default=500, help="draws per chain")
    ap.add_argument(
        "--spread", type=float, default=1.0,
        help="scale of the draws' deviations from the mode (0: every draw at the mode, the mode's own map)",
    )  # fmt: skip
    args = ap.parse_args()
    register()
    options = {"route_options": {k: getattr(args, k) for k in ("chains", "draws", "spread")}}
    route = label(args.chains, args.draws, args.spread)

    def one_row(truth: str, n: int, seed: int) -> dict:
        return run_one(truth, n, seed, "laplace", options, ["kde"]) | {"route": route}

    run_replicates(args, one_row)
    command = command_line("laplace_study.py", args, ("chains", "draws", "spread"))
    finish_study(
        args, "A Laplace approximation at the mode against the default", command,
        lambda p: paired_table(p, CONVERGENCE_COLUMNS),
    )  # fmt: skip


if __name__ == "__main__":
    main()
