r"""Study of a candidate core model: a smoothness prior on a fixed basis (Bayesian P-spline log-densities).

Why. The default DPM's chains do not reach split R-hat <= 1.01 and ESS >= 400 above N = 300,
and earlier stops traced that to the geometry of free location-scale mixtures: overlapping
components describe one smooth density in a continuum of ways, so no sampler measured (the
sweeps, Hamiltonian moves with the allocations summed out, NUTS, small truncations) mixes in
about a second. A fixed dictionary with Dirichlet weights (a DP with a discrete base measure)
mixes, but its weights make the density rough and its band swings with the concentration.
The candidate left was a smoothness prior on the weights of a fixed basis. Its posterior is
log-concave given the smoothing precision, so its draws can be independent (convergence by
construction) and its cost does not grow with N. This script measures whether its band is
honest on the coverage study's truths, where the DPM's is; it is not a Dirichlet-process
mixture, so it would replace the mission's model, not tune it.

Model. On the calibrator's working scale t (:func:`bayescal.data.to_working`), each class's
scores are counted on ``--bins`` equal bins of the pooled range plus 10 % on each side
(a multinomial over the bins), and the class's log density is a cubic B-spline with ``--basis``
coefficients :math:`\beta` on knots equally spaced (Eilers & Marx 1996; ``--knots equal``) or at the
pooled scores' quantiles (``--knots quantile``):

.. math::
    p_b \propto \exp\{(B\beta)_b\}, \qquad
    p(\beta \mid \lambda) \propto \lambda^{(J-2)/2} \exp(-\tfrac{\lambda}{2} \|\Delta^2 \beta\|^2),
    \qquad \lambda \sim \mathrm{Gamma}(1, 5 \times 10^{-4}),

the second-order random-walk prior of Bayesian P-splines (Lang & Brezger 2004), with a ridge of
1e-6 for the unpenalised constant. Given :math:`\lambda` the posterior is log-concave; its mode
is found by damped Newton steps and the draws are the Laplace approximation integrated over a
grid of 40 values of :math:`\log \lambda` from 1e-2 to 1e7 with their Laplace marginal
likelihoods as weights (as INLA does; Rue, Martino & Chopin 2009). The class prior has its
exact Beta(1 + n_1, 1 + n_0) posterior, and each of the 1000 independent draws gives the map
:math:`\pi f_1 / (\pi f_1 + (1 - \pi) f_0)` as in the DPM calibrator. There is no importance
correction of the Laplace draws, no atoms and no data preparation: research code.

The table pairs each cell with the DPM calibrator's rows of the coverage study on the same
seeds (``benchmarks/results/dpm_coverage.csv``, route ``gibbs (prior_spread="sd")``, the default
when this study ran, before 2026-12-03), which also give the KDE
calibrator's MAE; a cell that the coverage study did not run has no DPM columns.

Measured (2026-11-27, 2-core machine, ``benchmarks/results/logspline_study.md``; 30 seeds a
design cell, 20 a held-out one or one at 10^5, 10 for the monotone truth at 10^5-10^7;
0.3-1.1 s per fit at every N):

* Equal knots. On smooth truths the band is honest and the mean about as accurate as the
  DPM's: monotone 0.947-0.967 at every N from 300 to 10^6 (0.927, se 0.024, at 10^7; the DPM
  0.923 on the same seeds), MAE at most 0.0002 above the DPM's from 10^4 on (below it at 10^4,
  10^6 and 10^7); held-out bimodal, boosted and weak 0.961-0.995, MAE below the DPM's at
  10^4. Where the DPM's free scales matter it fails: the plateau 0.70-0.80 (the DPM
  0.89-0.91), the U shape 0.87-0.92, the rare class 0.83 at 300, and the mean map on piled,
  heavy-tailed and skewed scores is up to 13 times less accurate than the DPM's (at 10^4:
  piles MAE 0.0245 against 0.0062, heavy 0.105 against 0.009, skewed 0.138 against 0.010):
  equal knots over the long tails of the working scale leave few where the data are.
* Equal knots at 10^5 on nine other truths (20 seeds): the mean map is less accurate than the
  DPM's on every one (by 0.0002 on weak to 0.010 on piles) and above the KDE's on boosted,
  separable, piles and the plateau; the band covers 0.95-0.97 on five, 0.91-0.92 on boosted,
  separable and piles, 0.53 on the plateau.
* Quantile knots. The plateau's band is honest (0.919-0.962 at 300-10^4, MAE below the
  KDE's) but the mean map is less accurate than the DPM's on every other design cell but
  one (the rare class at 300), and on piles far less (MAE 0.09-0.11).

* Quantile knots with the curvature penalty (``--penalty curvature``, :func:`penalty_matrix`;
  10 seeds at 10^3), whose unpenalised log densities are linear in t at any knots, as the piles'
  tails are: the piles' error falls from 0.09 to 0.044 (still above the KDE's 0.031; 80 % band
  0.53), but the plateau's band loses what the index-linear penalty gave it (0.717 against 0.919
  with second differences; the DPM 0.903 on the same seeds), and the monotone map's error is
  above the DPM's (0.0147 against 0.0120). The second differences' flexibility where knots crowd
  is what covered the plateau, and the same flexibility bends the long tails.
* Quantile knots at 10^5 (20 seeds): the plateau covers 0.939 (the DPM 0.862 on the same seeds),
  but the monotone map's error is 0.0038 against the DPM's 0.0015 and the KDE's 0.0025, and the
  piles' 0.100 against 0.0018.

* Quantile knots on the ten held-out truths at 10^3 and 10^4 (20 seeds; the fit times of this
  run are inflated by another job on the machine): the mean map's error is above the KDE
  calibrator's in all twenty cells (1.1-10 times; separable 0.058 / 0.072 against 0.018 /
  0.007), and the band covers 0.69 on asym_piles at 10^3 and 0.83-0.84 on skewed (the DPM
  0.80-0.82, whose truth is exactly 0 below 1.5).

So no version is a replacement for the DPM: each meets the coverage bar only on the
shapes its knots suit, and its mean map is mostly less accurate. Only on the smooth monotone
truth does a posterior with independent draws match the DPM's band and error at 10^5-10^7
(in under a second, where the DPM's chains do not converge); at 10^5 on other truths the
DPM's free scales win.

Usage::

    python benchmarks/logspline_study.py --truths monotone plateau piles --n 300 1000 10000 --seeds 30

The table is printed and written to ``benchmarks/results/logspline_study.md`` with the
command, date and machine.

References
----------
Eilers, P. H. C. & Marx, B. D. (1996). Flexible smoothing with B-splines and penalties.
Statistical Science 11, 89-121.
Lang, S. & Brezger, A. (2004). Bayesian P-splines. Journal of Computational and Graphical
Statistics 13, 183-212.
Rue, H., Martino, S. & Chopin, N. (2009). Approximate Bayesian inference for latent Gaussian
models by using integrated nested Laplace approximations. JRSS B 71, 319-392.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
from scipy import linalg
from scipy.interpolate import BSpline
from scipy.special import expit, logsumexp

sys.path.insert(0, str(Path(__file__).resolve().parent))

from dpm_coverage import FORMER_DEFAULT, LEVELS, TRUTHS, _rows, region_grid, simulate

RESULTS = Path(__file__).parent / "results"
LOG_LAMBDA = np.linspace(np.log(1e-2), np.log(1e7), 40)
"""Grid of log smoothing precisions over which the Laplace approximations are integrated."""
LAMBDA_PRIOR = (1.0, 5e-4)
"""Shape and rate of the Gamma prior of the smoothing precision (Lang & Brezger 2004's default)."""
RIDGE = 1e-6
"""Precision of the weak normal prior on every coefficient (makes the constant direction proper)."""


def inner_knots(t: np.ndarray, lo: float, hi: float, n_basis: int, rule: str, degree: int = 3) -> np.ndarray:
    """The n_basis - degree + 1 knots on [lo, hi] of a spline basis: equally spaced (``rule="equal"``,
    P-splines' choice), or the ends with the pooled scores' quantiles between them (``"quantile"``)."""
    if rule == "equal":
        return np.linspace(lo, hi, n_basis - degree + 1)
    return np.r_[lo, np.quantile(t, np.linspace(0.0, 1.0, n_basis - degree + 1)[1:-1]), hi]


def _extended_knots(inner: np.ndarray, degree: int = 3) -> np.ndarray:
    """The knots ``inner`` extended beyond each end by ``degree`` knots at the end interval's spacing."""
    h0, h1 = inner[1] - inner[0], inner[-1] - inner[-2]
    return np.r_[inner[0] - h0 * np.arange(degree, 0, -1), inner, inner[-1] + h1 * np.arange(1, degree + 1)]


def bspline_design(x: np.ndarray, inner: np.ndarray, degree: int = 3) -> np.ndarray:
    """The (len(x), len(inner) + degree - 1) B-spline design matrix on the knots ``inner``
    (:func:`_extended_knots`)."""
    knots = _extended_knots(inner, degree)
    return BSpline.design_matrix(np.clip(x, inner[0], inner[-1]), knots, degree).toarray()


def penalty_matrix(inner: np.ndarray, rule: str, degree: int = 3) -> np.ndarray:
    r"""The smoothness penalty :math:`\beta^\top \Omega \beta` of the spline coefficients on the
    knots ``inner`` (as :func:`bspline_design` extends them): squared second differences of the
    coefficients (``rule="rw2"``, P-splines'), or the integrated squared second derivative of
    the log density over the knots' range, :math:`\int (B\beta)''(t)^2\,dt`
    (``"curvature"``; O'Sullivan 1986, Wand & Ormerod 2008), which with unequal knots still
    leaves a log density linear in t (exponential tails) unpenalised, where second differences
    of the coefficients leave one linear in the knots' index."""
    J = inner.size + degree - 1
    if rule == "rw2":
        diff2 = np.diff(np.eye(J), 2, axis=0)
        return diff2.T @ diff2
    knots = _extended_knots(inner, degree)
    nodes, weights = np.polynomial.legendre.leggauss(3)  # exact: the product of two linear pieces is quadratic
    a, b = inner[:-1], inner[1:]
    x = (0.5 * (b - a)[:, None] * nodes + 0.5 * (a + b)[:, None]).ravel()
    w = (0.5 * (b - a)[:, None] * weights).ravel()
    second = np.column_stack([BSpline(knots, np.eye(J)[j], degree).derivative(2)(x) for j in range(J)])
    return (second * w[:, None]).T @ second


def class_draws(
    counts: np.ndarray, design: np.ndarray, rng: np.random.Generator, n_draws: int, penalty: np.ndarray
) -> np.ndarray:
    """Posterior draws (n_draws, J) of one class's spline coefficients from its bin counts, under
    the smoothness ``penalty`` (:func:`penalty_matrix`)."""
    J = design.shape[1]
    total = counts.sum()
    a, b = LAMBDA_PRIOR

    def objective(beta, lam):
        g = design @ beta
        return counts @ (g - logsumexp(g)) - 0.5 * lam * beta @ penalty @ beta - 0.5 * RIDGE * beta @ beta

    def gradient_and_precision(beta, lam):
        """The objective's gradient and negative Hessian (the Laplace approximation's precision)."""
        g = design @ beta
        p = np.exp(g - logsumexp(g))
        bp = design.T @ p
        grad = design.T @ (counts - total * p) - lam * penalty @ beta - RIDGE * beta
        return grad, (design.T * (total * p)) @ design - total * np.outer(bp, bp) + lam * penalty + RIDGE * np.eye(J)

    beta = np.zeros(J)
    modes = []
    for log_lam in LOG_LAMBDA[::-1]:  # smooth to rough, each mode starting from the smoother one
        lam = float(np.exp(log_lam))
        value = objective(beta, lam)
        for _ in range(200):
            grad, hess = gradient_and_precision(beta, lam)
            step = linalg.solve(hess, grad, assume_a="sym")
            t = 1.0
            while True:  # halve the step until the objective does not fall
                trial = beta + t * step
                new = objective(trial, lam)
                if new >= value - 1e-10 or t < 1e-6:
                    break
                t *= 0.5
            beta, value = trial, new
            if np.abs(t * step).max() < 1e-7:
                break
        hess = gradient_and_precision(beta, lam)[1]  # at the mode
        log_marginal = (
            value + 0.5 * (J - 2) * log_lam - 0.5 * np.linalg.slogdet(hess)[1] + a * log_lam - b * lam
        )  # Laplace marginal likelihood of lambda, with its prior and the log-scale Jacobian
        modes.append((log_marginal, beta.copy(), hess))
    log_w = np.array([m[0] for m in modes])
    w = np.exp(log_w - log_w.max())
    which = rng.choice(len(modes), size=n_draws, p=w / w.sum())
    out = np.empty((n_draws, J))
    for i in np.unique(which):
        k = which == i
        chol = np.linalg.cholesky(modes[i][2])
        z = rng.standard_normal((int(k.sum()), J))
        out[k] = modes[i][1] + linalg.solve_triangular(chol.T, z.T, lower=False).T
    return out


def map_draws(
    s: np.ndarray,
    y: np.ndarray,
    kind: str,
    x: np.ndarray,
    n_basis: int,
    n_bins: int,
    seed: int,
    knots: str = "equal",
    n_draws: int = 1000,
    penalty: str = "rw2",
) -> np.ndarray:
    """Draws (n_draws, len(x)) of the calibration map at scores ``x``."""
    from bayescal.data import to_working

    rng = np.random.default_rng(seed)
    t = to_working(np.asarray(s, dtype=float), kind)
    lo, hi = float(t.min()), float(t.max())
    pad = 0.1 * (hi - lo)
    lo, hi = lo - pad, hi + pad
    edges = np.linspace(lo, hi, n_bins + 1)
    centres = 0.5 * (edges[1:] + edges[:-1])
    inner = inner_knots(t, lo, hi, n_basis, knots)
    design = bspline_design(centres, inner)
    at_x = bspline_design(to_working(np.asarray(x, dtype=float), kind), inner)
    omega = penalty_matrix(inner, penalty)
    log_density = []
    for c in (0, 1):
        beta = class_draws(np.histogram(t[y == c], edges)[0].astype(float), design, rng, n_draws, omega)
        log_density.append(beta @ at_x.T - logsumexp(beta @ design.T, axis=1)[:, None])
    n1 = int(y.sum())
    pi = rng.beta(1 + n1, 1 + y.size - n1, n_draws)[:, None]
    return expit(np.log(pi) - np.log1p(-pi) + log_density[1] - log_density[0])


def replicate(
    truth: str, n: int, seed: int, n_basis: int, n_bins: int, knots: str = "equal", penalty: str = "rw2"
) -> dict:
    """Coverage of the 50/80/95 % bands over the data region, MAE of the mean map, time."""
    s, y, true_map, kind = simulate(truth, n, seed)
    grid = region_grid(s)
    truth_vals = true_map(grid)
    t0 = time.perf_counter()
    draws = map_draws(s, y, kind, grid, n_basis, n_bins, seed, knots, penalty=penalty)
    row = {"time_s": time.perf_counter() - t0, "mae": float(np.mean(np.abs(draws.mean(0) - truth_vals)))}
    for q in LEVELS:
        lo, hi = np.quantile(draws, [(1 - q) / 2, (1 + q) / 2], axis=0)
        row[f"cov{round(100 * q)}"] = float(np.mean((lo <= truth_vals) & (truth_vals <= hi)))
    return row


def dpm_rows(path: Path = RESULTS / "dpm_coverage.csv") -> dict[tuple[str, int, int], dict]:
    """The coverage study's rows of the default DPM of the time this study ran
    (:data:`dpm_coverage.FORMER_DEFAULT`) by (truth, N, seed)."""
    if not path.exists():
        return {}
    return {(r["truth"], int(r["n"]), int(r["seed"])): r for r in _rows(path) if r["route"] == FORMER_DEFAULT}


def summarise(truth: str, n: int, rows: list[dict], dpm: dict) -> str:
    """One table line: the candidate's coverage (se), MAE and time beside the DPM's on the same seeds."""
    cov = np.array([r["cov95"] for r in rows])
    se = cov.std(ddof=1) / np.sqrt(cov.size) if cov.size > 1 else float("nan")
    paired = [dpm.get((truth, n, r["seed"])) for r in rows]
    paired = [p for p in paired if p is not None]
    if paired:
        dpm_cov = f"{np.mean([float(p['cov95']) for p in paired]):.3f}"
        dpm_mae = f"{np.mean([float(p['mae']) for p in paired]):.4f}"
        kde = f"{np.mean([json.loads(p['others'])['kde'] for p in paired]):.4f}"
    else:
        dpm_cov = dpm_mae = kde = "-"
    return (
        f"| {truth} | {n} | {len(rows)} | {cov.mean():.3f} ({se:.3f}) | {np.mean([r['cov80'] for r in rows]):.3f} "
        f"| {np.mean([r['cov50'] for r in rows]):.3f} | {np.mean([r['mae'] for r in rows]):.4f} "
        f"| {dpm_cov} | {dpm_mae} | {kde} | {len(paired)} | {np.mean([r['time_s'] for r in rows]):.2f} |"
    )


HEAD = (
    "| truth | N | seeds | 95 % cov (se) | 80 % | 50 % | MAE | DPM 95 % cov | DPM MAE | KDE MAE "
    "| seeds paired with the DPM | time s |"
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--truths", nargs="+", default=["monotone", "plateau", "piles"], choices=list(TRUTHS))
    ap.add_argument("--n", nargs="+", type=int, default=[300, 1000, 10000])
    ap.add_argument("--seeds", type=int, default=30)
    ap.add_argument("--basis", type=int, default=40, help="B-spline coefficients per class")
    ap.add_argument("--bins", type=int, default=400, help="bins of the working scale")
    ap.add_argument("--append", action="store_true", help="add the table to --out instead of replacing it")
    ap.add_argument("--knots", choices=["equal", "quantile"], default="equal", help="knot placement")
    ap.add_argument(
        "--penalty", choices=["rw2", "curvature"], default="rw2", help="smoothness penalty (penalty_matrix)"
    )
    ap.add_argument("--out", type=Path, default=RESULTS / "logspline_study.md")
    args = ap.parse_args()
    dpm = dpm_rows()
    lines = [HEAD, "|---" * (HEAD.count("|") - 1) + "|"]
    print(HEAD, flush=True)
    for truth in args.truths:
        for n in args.n:
            rows = [
                replicate(truth, n, seed, args.basis, args.bins, args.knots, args.penalty) | {"seed": seed}
                for seed in range(args.seeds)
            ]
            lines.append(summarise(truth, n, rows, dpm))
            print(lines[-1], flush=True)
    command = (
        f"python benchmarks/logspline_study.py --truths {' '.join(args.truths)} --n {' '.join(map(str, args.n))} "
        f"--seeds {args.seeds} --basis {args.basis} --bins {args.bins} --knots {args.knots}"
        + (f" --penalty {args.penalty}" if args.penalty != "rw2" else "")
    )
    stamp = (
        f"*Written {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} ({platform.system()} {platform.machine()}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}): `{command}`*"
    )
    text = "\n".join(lines) + "\n"
    if args.out.exists() and args.append:
        args.out.write_text(args.out.read_text() + f"\n{stamp}\n\n" + text)
    else:
        args.out.write_text(f"# Bayesian P-spline log-densities against the DPM\n\n{stamp}\n\n" + text)


if __name__ == "__main__":
    main()
