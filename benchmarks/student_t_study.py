r"""Student-t components against Gaussian ones in the DPM, on the coverage study's truths.

The core issue names heavier-tailed components (Student-t) among the candidates for the
class densities. This study fits them in the calibrator's own pipeline (data preparation,
KDE-informed priors, class prior, null-model stacking, map draws and their convergence
check), changing only the component kernel, and scores them on the replicates of
``benchmarks/dpm_coverage.py`` beside Gaussian components (``components="gaussian"``) fitted
in the same run on the same data and seeds.

**Model.** Per class, the truncated stick-breaking mixture of the calibrator with Gaussian
components (:mod:`bayescal.bayesian.gibbs`), each component a Student-t with ``nu`` degrees of
freedom instead of a Gaussian:

.. math::
    x_i \sim \textstyle\sum_k w_k\, t_\nu(\mu_k, \sigma_k), \quad
    \mu_k \sim \mathcal N(m_k, s^2), \quad \sigma_k \sim \mathrm{LogNormal}(\ell, \tau^2),

with the same sticks, concentration and KDE-informed hyperparameters. ``nu`` is fixed
(default 4: tails like those of decision values with a few outliers, the usual choice of
robust mixtures; Peel & McLachlan 2000).

**Sampler.** The blocked Gibbs sampler of Ishwaran & James (2001) with the Student-t written as
a scale mixture of normals, :math:`x \mid \lambda \sim \mathcal N(\mu, \sigma^2/\lambda)`,
:math:`\lambda \sim \mathrm{Gamma}(\nu/2, \nu/2)`: given the allocations, the :math:`n_{ik}`
units of point i in component k have latent precisions whose sum is
:math:`\mathrm{Gamma}(n_{ik}(\nu+1)/2,\ (\nu + z_{ik}^2)/2)`, :math:`z_{ik} = (x_i - \mu_k)/\sigma_k`;
the means are then conjugate normal with precision :math:`1/s^2 + \sum \lambda / \sigma_k^2`, and the
log-scales take the calibrator's random-walk Metropolis steps on the :math:`\lambda`-weighted
sum of squares. Sticks, concentration, the floor on the scales for binned data, the thinning
(:func:`bayescal.bayesian.gibbs.default_thin`), warm-up and chains are the calibrator's. It is
compiled with numba; each chain has its own generator spawned from ``random_seed``.
The Gaussian sampler adds Hamiltonian moves above 20,000 units a class and a mode start above
100,000: the study is meant for N <= 10^4 (a class below 20,000 units), where both samplers run
plain sweeps from the same start.

**Evaluation.** While a Student-t fit is scored, :func:`bayescal.bayesian.mixture.log_density`
is replaced (:func:`student_t_kernels`) by the Student-t mixture's log density for the
Gaussian family's parameters, so every density, map and leave-one-out score the calibrator
computes from the draws is the Student-t model's. Nothing of this is part of the package.

Run::

    python benchmarks/student_t_study.py --truths heavy overconfident plateau piles monotone --n 300 1000 10000 --seeds 16

It appends one row per (candidate, truth, N, seed) to ``--out`` (CSV, the coverage study's
columns) and writes the table of means to the same name with ``.md``, with the command of every
run that wrote rows (``--seeds 0`` rewrites the table alone).

The measured tables are in ``benchmarks/results/student_t_study.md`` and on the documentation's
page of candidate models (``docs/evidence/candidates.md``).

References
----------
Ishwaran, H. & James, L. F. (2001). Gibbs sampling methods for stick-breaking priors.
JASA 96, 161-173.
Peel, D. & McLachlan, G. J. (2000). Robust mixture modelling using the t distribution.
Statistics and Computing 10, 339-348.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import sys
import time
from pathlib import Path

import numpy as np
from numba import njit
from scipy.special import gammaln

sys.path.insert(0, str(Path(__file__).parent))
from _mixture_sweeps import (
    chunked_mixture_logsumexp,
    class_chains_setup,
    class_posterior,
    exp_normalise,
    pick_component,
    prior_location_scale,
    run_chains,
    stick_log_weights,
    stick_weights,
    sticks_and_concentration,
)
from _study_files import appending, stamp_runs
from dpm_coverage import HELD_OUT, TRUTHS, _rows, cell_summary, cells, run_one

from bayescal.bayesian._gibbs_kernels import binomial
from bayescal.bayesian.class_fit import ClassFit

RESULTS = Path(__file__).parent / "results"
ROUTE = "student_t"
CANDIDATES = {"gaussian": ("gibbs", {"components": "gaussian"}), ROUTE: (ROUTE, {"components": "gaussian"})}


@njit(cache=True, nogil=True)
def _t_chain(
    x, c_int, c_frac, m, s2, ell, tau, log_floor, nu, a_alpha, b_alpha, mu, u, v, tune, thin, n_keep, n_mh, gen
):
    """One chain of the Student-t mixture's blocked Gibbs sampler (module docstring); returns the
    kept weights, means, scales and concentrations, and the share of accepted scale steps."""
    n, K = x.size, mu.size
    alpha = a_alpha / b_alpha
    out_w, out_mu, out_sigma = np.empty((n_keep, K)), np.empty((n_keep, K)), np.empty((n_keep, K))
    out_alpha = np.empty(n_keep)
    logw, p = np.empty(K), np.empty(K)
    nk, sl, slx, slxx = np.empty(K), np.empty(K), np.empty(K), np.empty(K)
    half = 0.5 * (nu + 1.0)
    accepted = proposed = 0
    for it in range(tune + n_keep * thin):
        stick_log_weights(v, logw)
        nk[:] = 0.0
        sl[:] = 0.0
        slx[:] = 0.0
        slxx[:] = 0.0
        for i in range(n):  # 1. allocations and the latent precisions' sums
            for k in range(K):
                z = (x[i] - mu[k]) * math.exp(-u[k])
                p[k] = logw[k] - u[k] - half * math.log1p(z * z / nu)
            tot = exp_normalise(p)
            left, mass = c_int[i], tot
            for k in range(K):
                if left == 0:
                    break
                if k == K - 1 or p[k] >= mass:
                    nik = left
                elif p[k] <= 0.0:
                    nik = 0
                else:
                    nik = binomial(gen, left, p[k] / mass)
                mass -= p[k]
                left -= nik
                if nik > 0:
                    z = (x[i] - mu[k]) * math.exp(-u[k])
                    lam = gen.gamma(nik * half, 2.0 / (nu + z * z))
                    nk[k] += nik
                    sl[k] += lam
                    slx[k] += lam * x[i]
                    slxx[k] += lam * x[i] * x[i]
            f = c_frac[i]
            if f > 0.0:  # a fractional weight: one unit of weight f, power likelihood
                k = pick_component(gen, p, tot)
                z = (x[i] - mu[k]) * math.exp(-u[k])
                lam = gen.gamma(0.5 * (nu + f), 2.0 / (nu + f * z * z))
                nk[k] += f
                sl[k] += f * lam
                slx[k] += f * lam * x[i]
                slxx[k] += f * lam * x[i] * x[i]
        alpha = sticks_and_concentration(v, nk, alpha, a_alpha, b_alpha, gen)  # 2-3. sticks, concentration
        for k in range(K):  # 4-5. means and log-scales
            if nk[k] == 0.0:
                mu[k], u[k] = prior_location_scale(m[k], s2, ell, tau, log_floor, gen)
                continue
            prec = 1.0 / s2 + sl[k] * math.exp(-2.0 * u[k])
            mu[k] = (m[k] / s2 + slx[k] * math.exp(-2.0 * u[k])) / prec + gen.standard_normal() / math.sqrt(prec)
            ss = max(slxx[k] - 2.0 * mu[k] * slx[k] + mu[k] * mu[k] * sl[k], 0.0)
            step = 2.4 / math.sqrt(1.0 / tau**2 + 2.0 * nk[k])
            lp = -0.5 * ((u[k] - ell) / tau) ** 2 - nk[k] * u[k] - 0.5 * ss * math.exp(-2.0 * u[k])
            for _ in range(n_mh):
                prop = u[k] + step * gen.standard_normal()
                lp_prop = -0.5 * ((prop - ell) / tau) ** 2 - nk[k] * prop - 0.5 * ss * math.exp(-2.0 * prop)
                proposed += 1
                if prop >= log_floor and math.log(gen.random()) < lp_prop - lp:
                    u[k], lp = prop, lp_prop
                    accepted += 1
        if it >= tune and (it - tune) % thin == 0:
            j = (it - tune) // thin
            stick_weights(v, out_w[j])
            out_mu[j] = mu
            out_sigma[j] = np.exp(u)
            out_alpha[j] = alpha
    return out_w, out_mu, out_sigma, out_alpha, accepted / max(proposed, 1)


def fit_student_t(
    x: np.ndarray,
    counts: np.ndarray,
    prior: dict,
    *,
    n_components: int,
    random_seed: int | None,
    draws: int = 500,
    tune: int = 500,
    chains: int = 2,
    n_mh: int = 2,
    nu: float = 4.0,
) -> ClassFit:
    """One class's Student-t mixture (module docstring) in the route layout; the calibrator's
    Gaussian prior (``mu_loc``, ``mu_scale``, ``sigma_logmean``, ``sigma_logsd``, the ``init_*``
    start and ``scale_floor``) is taken as it is."""
    t0 = time.perf_counter()
    c = class_chains_setup(x, counts, prior, tune, draws, n_mh)
    hyper = (c["s2"], c["ell"], c["tau"], c["log_floor"], float(nu), c["a_alpha"], c["b_alpha"])

    def chain(gen):  # the start's arrays are copied: the sweeps update them in place
        return _t_chain(*c["data"], *hyper, c["mu0"].copy(), c["u0"].copy(), c["v0"].copy(), *c["run"], gen)

    results = run_chains(chain, chains, random_seed)
    kept, acc = [r[:4] for r in results], [r[4] for r in results]
    posterior = class_posterior(*(np.stack([k[j] for k in kept]) for j in range(4)))
    posterior["mu"] = posterior["mu"] + c["shift"]
    diagnostics = {
        "route": ROUTE,
        "nu": float(nu),
        "mh_acceptance": float(np.mean(acc)),
        "n_iterations": c["n_iterations"],
        "runtime_s": time.perf_counter() - t0,
    }
    return ClassFit(posterior=posterior, diagnostics=diagnostics)


def t_log_density(t: np.ndarray, weight: np.ndarray, mu: np.ndarray, sigma: np.ndarray, nu: float) -> np.ndarray:
    r"""Log density (..., n) of Student-t mixtures at points ``t``:
    :math:`\log \sum_k w_k\, t_\nu(t \mid \mu_k, \sigma_k)`, one mixture per leading index."""
    t = np.asarray(t, dtype=np.float64)
    lead, K = weight.shape[:-1], weight.shape[-1]
    w2, m2, s2 = (np.asarray(a, dtype=np.float64).reshape(-1, K) for a in (weight, mu, sigma))
    const = gammaln(0.5 * (nu + 1)) - gammaln(0.5 * nu) - 0.5 * np.log(nu * np.pi)

    def log_terms(sl):
        z = (t[None, None, :] - m2[sl, :, None]) / s2[sl, :, None]
        terms = (np.log(w2[sl]) - np.log(s2[sl]) + const)[:, :, None]
        return terms - 0.5 * (nu + 1) * np.log1p(z * z / nu)

    return chunked_mixture_logsumexp(w2.shape[0], K, t.size, log_terms).reshape(*lead, t.size)


@contextlib.contextmanager
def student_t_kernels(nu: float):
    """Within the block, the calibrator evaluates its Gaussian-family draws as Student-t mixtures."""
    from bayescal.bayesian import mixture

    original = mixture.log_density

    def log_density(t, weight, p1, p2, family="gaussian"):
        if family != "gaussian":
            return original(t, weight, p1, p2, family)
        return t_log_density(t, weight, p1, p2, nu)

    mixture.log_density = log_density
    try:
        yield
    finally:
        mixture.log_density = original


def register() -> None:
    """Make ``inference="student_t"`` fit with :func:`fit_student_t` in this process."""
    from bayescal.bayesian import routes

    routes.ROUTES[ROUTE] = fit_student_t


def run_candidate(name: str, truth: str, n: int, seed: int, nu: float) -> dict:
    """One replicate of candidate ``name`` scored as in ``dpm_coverage.run_one`` (KDE beside it)."""
    route, options = CANDIDATES[name]
    if name != ROUTE:
        return run_one(truth, n, seed, route, options, ["kde"])
    register()
    with student_t_kernels(nu):
        row = run_one(truth, n, seed, route, options | {"route_options": {"nu": nu}}, ["kde"])
    row["route"] = f"{ROUTE} (nu={nu:g})"
    return row


def summarise(path: Path) -> str:
    """Means over seeds per (candidate, truth, N) as a markdown table."""
    from bayescal.bayesian.convergence import meets_target

    head = (
        "| candidate | truth | N | seeds | 95 % cov (se) | 80 % | 50 % | 95 % data-weighted | MAE | MAE KDE "
        "| width | R-hat max | ESS bulk min | converged | time s |"
    )
    lines = [head, "|---" * (head.count("|") - 1) + "|"]
    for key, sel in cells(_rows(path), lambda route: (route != "gibbs (gaussian)", route)):
        c = cell_summary(sel)
        conv = sum(bool(meets_target(r)) for r in sel)
        lines.append(
            f"| {key[0]} | {key[1]}{' (held out)' if key[1] in HELD_OUT else ''} | {key[2]} | {c['seeds']} "
            f"| {c['cov95']:.3f} ({c['cov95_se']:.3f}) "
            f"| {c['cov80']:.3f} | {c['cov50']:.3f} | {c['cov95_data']:.3f} | {c['mae']:.4f} "
            f"| {c['others'].get('kde', float('nan')):.4f} | {c['width']:.3f} | {c['rhat_max']:.3f} "
            f"| {c['ess_bulk_min']:.0f} | {conv}/{len(sel)} | {c['time_s']:.1f} |"
        )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--truths", nargs="+", default=["heavy", "overconfident", "plateau"], choices=list(TRUTHS))
    ap.add_argument("--n", nargs="+", type=int, default=[300, 1000, 10000])
    ap.add_argument("--seeds", type=int, default=16)
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--nu", type=float, default=4.0, help="degrees of freedom of the Student-t components")
    ap.add_argument("--candidates", nargs="+", default=list(CANDIDATES), choices=list(CANDIDATES))
    ap.add_argument("--out", type=Path, default=RESULTS / "student_t_study.csv")
    args = ap.parse_args()
    if any(n > 10_000 for n in args.n):
        ap.error("--n above 10000: the Gaussian sampler then adds moves this one lacks (module docstring)")
    with appending(args.out) as write:
        for truth in args.truths:
            for n in args.n:
                for seed in range(args.first_seed, args.first_seed + args.seeds):
                    for name in args.candidates:
                        row = run_candidate(name, truth, n, seed, args.nu)
                        write(row)
                        print(f"{row['route']} {truth} {n} {seed}: cov95 {row['cov95']:.3f} mae {row['mae']:.4f} "
                              f"rhat {row['rhat_max']:.3f} {row['time_s']:.1f} s", flush=True)  # fmt: skip
    command = (
        f"python benchmarks/student_t_study.py --truths {' '.join(args.truths)} --n {' '.join(map(str, args.n))} "
        f"--seeds {args.seeds} --first-seed {args.first_seed} --nu {args.nu:g} --candidates {' '.join(args.candidates)}"
    )
    stamp_runs(
        args.out,
        "Student-t components against Gaussian ones",
        f"Rows of `{args.out.name}`, written by these runs (each appends its rows):",
        command if args.seeds > 0 else None,
        summarise(args.out),
    )
    print(summarise(args.out))


if __name__ == "__main__":
    main()
