r"""A Gaussian-process model of the map (logistic GP classification on the working scale), as a
candidate for the core issue.

Why. The calibrator's band fails where the map has kinks or flat stretches (the plateau truth of
``benchmarks/dpm_coverage.py``), its chains do not converge above N = 300, and the candidates
measured so far either model the class densities or cut the map into pieces
(``docs/evidence/candidates.md``). The customary Bayesian nonparametric model of a probability
curve is a Gaussian process on its log-odds (Rasmussen & Williams 2006, ch. 3): smooth at a
length scale the data choose, with no mixture components to switch and, given the
hyperparameters, a posterior that a Laplace approximation gives in closed form, so its draws are
independent (no chains to converge) and a fit costs the same at every N.

**Model.** The scores on the working scale t, standardised to u = (t - mean) / sd, are sorted
into B bins of equal count (B = N / 3 within [30, 200]); bin b holds :math:`n_b` scores,
:math:`k_b` positives and mean :math:`\bar u_b`. Then

.. math::
    k_b \sim \mathrm{Binomial}(n_b, \operatorname{expit} g(\bar u_b)), \quad
    g \sim \mathcal{GP}\big(0,\ 5^2 + 5^2 u u' + \eta^2 M_{5/2}(|u - u'| / \ell)\big),

a logistic line of the working scale (Platt scaling, intercept and slope N(0, 5^2)) plus a
Matérn-5/2 deviation of amplitude :math:`\eta` and length scale :math:`\ell`, with
:math:`(\ell, \eta)` uniform on a grid of :data:`LENGTHS` x :data:`AMPLITUDES` (log-spaced:
:math:`\ell` from 0.03 to 5 standard deviations of the scores, :math:`\eta` from 0.05 to 5).

**Posterior.** For each grid point the Laplace approximation (Newton's method on the latent
values at the bins, Rasmussen & Williams' algorithm 3.1) gives the approximate marginal
likelihood and a Gaussian posterior of g at the bins; the grid point of each draw is drawn from
the normalised marginal likelihoods, then g at the evaluation points jointly from its Gaussian
predictive given that grid point (algorithm 3.2, with the full covariance), and the map is
:math:`\operatorname{expit} g`. Approximations: the scores of a bin sit at its mean, and the
posterior given the hyperparameters is Gaussian.

**Measured** (2026-11-27, 2-core machine, 10 seeds a cell on the seven design truths at
N = 300, 10^3 and 10^4; 0.4-4.3 s a fit; ``benchmarks/results/gp_map_study.md``): rejected. Its 95 %
band lies inside 0.92-0.98 in 5 of the 21 cells, the default calibrator's on the same seeds in 13
(the whole bar, with the 80 % and 50 % bands and the error: 4 against 8). Smooth truths
over-cover: the monotone truth, whose map is the GP's logistic line, 1.000 at every N with a
50 % band covering 0.63-0.69, the overconfident classifier 0.995-1.000, the rare class 1.000 at
300 and 10^4. Piled scores under-cover at 300 / 10^3 (0.896 / 0.884, data-weighted 0.68 / 0.83),
the U shape at 10^3 / 10^4 (0.916 / 0.919). The plateau gives 0.903 / 0.934 / 0.913, about the
default's 0.900 / 0.903 / 0.904. The posterior of the hyperparameters is broad (the draws of a
fit spread over tens of grid points), and mixing over it makes the band too wide where the line
alone fits and too narrow where the length scale it settles on smooths the shape away. The
held-out truths were not run.

Usage::

    python benchmarks/gp_map_study.py --truths monotone plateau --n 300 1000 10000 --seeds 10

Rows are appended to ``--out`` (``benchmarks/results/gp_map_study.csv``) with the coverage
study's columns; the table beside the default calibrator's rows on the same seeds is written to
the ``.md`` beside it with the command of every run.

References
----------
Rasmussen, C. E. & Williams, C. K. I. (2006). Gaussian Processes for Machine Learning. MIT Press.
Szabó, B., van der Vaart, A. W. & van Zanten, J. H. (2015). Frequentist coverage of adaptive
nonparametric Bayesian credible sets. Annals of Statistics 43, 1391-1428.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
from scipy import linalg, special

sys.path.insert(0, str(Path(__file__).parent))
from _study_files import paired_table, replicate, run_study, scored_row, study_parser
from change_point_study import bin_scores
from dpm_coverage import FIELDS

ROUTE = "GP map"
LINE_SD = 5.0
"""Prior standard deviation of the logistic line's intercept and slope (standardised scores)."""
LENGTHS = np.exp(np.linspace(np.log(0.03), np.log(5.0), 12))
"""Grid of the Matérn length scale, in standard deviations of the working-scale scores."""
AMPLITUDES = np.exp(np.linspace(np.log(0.05), np.log(5.0), 8))
"""Grid of the Matérn amplitude on the log-odds scale."""
BIN_RANGE = (30, 200)
"""Fewest and most bins (N / 3 within the range)."""
JITTER = 1e-6
"""Added to the prior covariance's diagonal."""


def kernel(a: np.ndarray, b: np.ndarray, length: float, amplitude: float) -> np.ndarray:
    """Prior covariance of g between standardised scores ``a`` and ``b``: the logistic line's part
    plus the Matérn-5/2 part."""
    r = np.abs(a[:, None] - b[None, :]) * (np.sqrt(5.0) / length)
    matern = amplitude**2 * (1.0 + r + r * r / 3.0) * np.exp(-r)
    return LINE_SD**2 * (1.0 + a[:, None] * b[None, :]) + matern


def laplace(n: np.ndarray, k: np.ndarray, K: np.ndarray, start: np.ndarray, steps: int = 100) -> dict:
    """Laplace approximation of the binomial GP posterior at the bins (Rasmussen & Williams,
    algorithm 3.1), Newton's method from the latent values ``start``: the mode, the log marginal
    likelihood (less the binomial coefficients), and the factors algorithm 3.2 needs."""
    f = start.copy()
    obj_old = -np.inf
    for _ in range(steps):
        p = special.expit(f)
        W = n * p * (1.0 - p)
        sw = np.sqrt(W)
        L = linalg.cholesky(np.eye(n.size) + sw[:, None] * K * sw[None, :], lower=True)
        b = W * f + (k - n * p)
        a = b - sw * linalg.cho_solve((L, True), sw * (K @ b))
        f_new = K @ a
        ll = np.sum(k * f_new - n * np.logaddexp(0.0, f_new))
        obj = -0.5 * a @ f_new + ll
        if obj < obj_old:  # a step that lowers the objective: halve it
            f = 0.5 * (f + f_new)
            continue
        f = f_new
        if obj - obj_old < 1e-9:
            break
        obj_old = obj
    p = special.expit(f)
    W = n * p * (1.0 - p)
    sw = np.sqrt(W)
    L = linalg.cholesky(np.eye(n.size) + sw[:, None] * K * sw[None, :], lower=True)
    ll = np.sum(k * f - n * np.logaddexp(0.0, f))
    grad = k - n * p  # at the mode K^-1 f = grad log p(k | f)
    log_ml = -0.5 * grad @ f + ll - np.sum(np.log(np.diag(L)))
    return {"f": f, "grad": grad, "sw": sw, "L": L, "log_ml": float(log_ml)}


def map_draws(t, y, points, draws: int, rng: np.random.Generator) -> tuple[np.ndarray, float]:
    """``draws`` independent posterior draws of the map at ``points`` (working scale), and the
    posterior mean of the length scale (in standard deviations of the scores)."""
    centre, scale = float(np.mean(t)), float(np.std(t)) or 1.0
    u, up = (t - centre) / scale, (points - centre) / scale
    n_bins = int(np.clip(t.size // 3, *BIN_RANGE))
    n, k, mean, _ = bin_scores(u, y, n_bins)
    grid = [(ell, eta) for ell in LENGTHS for eta in AMPLITUDES]
    fits = []
    start = np.zeros(mean.size)
    for ell, eta in grid:  # each Newton search from the previous grid point's mode
        K = kernel(mean, mean, ell, eta) + JITTER * np.eye(mean.size)
        fits.append(laplace(n, k, K, start))
        start = fits[-1]["f"]
    log_ml = np.array([f["log_ml"] for f in fits])
    weights = special.softmax(log_ml)
    which = rng.choice(len(grid), size=draws, p=weights)
    out = np.empty((draws, points.size))
    for g in np.unique(which):
        ell, eta = grid[g]
        fit = fits[g]
        Ks = kernel(mean, up, ell, eta)
        mu = Ks.T @ fit["grad"]
        V = linalg.solve_triangular(fit["L"], fit["sw"][:, None] * Ks, lower=True)
        cov = kernel(up, up, ell, eta) - V.T @ V + JITTER * np.eye(up.size)
        try:
            root = linalg.cholesky(cov, lower=True)
        except linalg.LinAlgError:  # numerically semi-definite: its eigen-decomposition
            w, Q = np.linalg.eigh(cov)
            root = Q * np.sqrt(np.clip(w, 0.0, None))
        sel = np.flatnonzero(which == g)
        out[sel] = special.expit(mu + rng.standard_normal((sel.size, up.size)) @ root.T)
    return out, float(np.sum(weights * np.array([ell for ell, _ in grid])))


def run_gp(truth: str, n: int, seed: int, draws: int = 1000) -> dict:
    """One replicate scored as ``dpm_coverage.run_one`` scores the calibrator (no other calibrators)."""
    from bayescal.data import to_working

    rep = replicate(truth, n, seed)
    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()
    maps, length = map_draws(to_working(rep.s, rep.kind), rep.y, to_working(rep.points, rep.kind), draws, rng)
    row = scored_row(rep, ROUTE, maps, time.perf_counter() - t0, length=length)
    row |= {"rhat_max": float("nan"), "ess_bulk_min": float(draws), "ess_tail_min": float(draws), "others": "{}"}
    return row


def summarise(path: Path) -> str:
    """The table of the study's rows beside the default calibrator's on the same seeds
    (:func:`_study_files.paired_table`), with the posterior mean length scale."""
    return paired_table(path, (("length scale", lambda c, sel: f"{c['length']:.2f}"),))


def main() -> None:
    args = study_parser(__doc__, "gp_map_study.py").parse_args()
    run_study(
        args,
        "gp_map_study.py",
        "A Gaussian-process model of the map against the DPM",
        run_gp,
        summarise,
        FIELDS + ["length"],
    )


if __name__ == "__main__":
    main()
