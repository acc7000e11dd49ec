"""How far one class's mixture posterior is from a Gaussian at its mode (issue "variational inference").

A Gaussian approximation of the posterior (Laplace, mean-field or full-rank ADVI, DADVI with
a linear-response covariance, the normal paths of Pathfinder) can only carry an honest band
if the log posterior is close to quadratic where the posterior mass is. For one class of the
monotone truth (f0 = Beta(2, 5), f1 = Beta(5, 2), pi = 0.4; the scores prepared as the
calibrator prepares them, so compressed to bins above 2,048) this script

1. finds the mode of the class's log posterior
   (:func:`bayescal.bayesian.mode_start.log_posterior`: the mixture likelihood and the
   components' priors, K = 20, weights by softmax) by L-BFGS;
2. takes its Hessian H by forward differences of the analytic gradient; eigenvalues below
   1 (the softmax's flat direction, components the data barely use) are raised to 1, the
   curvature of the components' priors, so that the whitened coordinates
   z = H^{1/2} (theta - mode) exist;
3. along 50 random unit directions u of z compares the log posterior's drop from the mode
   at z = r u with the drop of the Gaussian that has this Hessian (-r^2 / 2 where no
   eigenvalue was raised), for r = 0.3 and 1;
4. draws 1,000 points from that Gaussian (the Laplace approximation) and reports the Pareto
   k-hat of the importance ratios log p - log q (above 0.7 the approximation's draws
   cannot be reweighted into the posterior; Vehtari et al. 2024; "-" where the tail is too
   degenerate to fit) and the largest normalised importance weight (near 1: one draw
   carries the whole reweighted sample).

Usage::

    python benchmarks/posterior_geometry.py [--n 1000 10000 100000 1000000] [--seed 0]

Prints a markdown table, one row per N and class.
"""

from __future__ import annotations

import argparse
import datetime as dt
import platform
import sys
from pathlib import Path

import numpy as np
from scipy.optimize import minimize
from scipy.special import logsumexp

sys.path.insert(0, str(Path(__file__).resolve().parent))
from dpm_speed import simulate


def geometry(x: np.ndarray, counts: np.ndarray, prior: dict, rng: np.random.Generator) -> dict:
    from bayescal._stats import hessian_from_gradient
    from bayescal.bayesian.averaging import psis_log_weights
    from bayescal.bayesian.mode_start import log_posterior

    negative, theta0, _ = log_posterior(x, counts, prior)
    with np.errstate(all="ignore"):
        mode = minimize(negative, theta0, jac=True, method="L-BFGS-B", options={"maxiter": 5000}).x
    top = -negative(mode)[0]
    H = hessian_from_gradient(lambda theta: negative(theta)[1], mode)  # precision of the Laplace approximation
    lam, V = np.linalg.eigh(H)
    raised = np.maximum(lam, 1.0)
    root_inv = V / np.sqrt(raised)  # theta - mode = root_inv @ z

    def drop(z: np.ndarray) -> float:
        return -negative(mode + root_inv @ z)[0] - top

    out: dict = {"dim": mode.size, "nonpositive": int((lam <= 0).sum()), "raised": int((lam < 1.0).sum())}
    for r in (0.3, 1.0):
        actual, gaussian = [], []
        for _ in range(50):
            u = rng.standard_normal(mode.size)
            z = r * u / np.linalg.norm(u)
            with np.errstate(all="ignore"):
                actual.append(drop(z))
            gaussian.append(-0.5 * float((z * z * np.maximum(lam, 0.0) / raised).sum()))
        out[f"drop_{r}"] = float(np.median(actual))
        out[f"gauss_{r}"] = float(np.median(gaussian))
    zs = rng.standard_normal((1000, mode.size))
    with np.errstate(all="ignore"):
        log_p = np.array([drop(z) for z in zs])
    log_q = -0.5 * (zs * zs).sum(axis=1)
    ratios = np.where(np.isfinite(log_p), log_p - log_q, -np.inf)
    finite = ratios[np.isfinite(ratios)]
    ratios = np.where(np.isfinite(ratios), ratios, finite.min() - 1e3)  # a draw outside the support
    _, k = psis_log_weights(ratios[:, None], 1.0)
    out["khat"] = float(k[0])
    out["top_weight"] = float(np.exp(ratios.max() - logsumexp(ratios)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", nargs="+", type=int, default=[1000, 10_000, 100_000, 1_000_000])
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    from bayescal.bayesian.preparation import prepare
    from bayescal.bayesian.priors import resolve_priors
    from bayescal.data import prepare_data

    print(
        f"*{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC, {platform.system()} {platform.machine()}, "
        f"Python {platform.python_version()}; `python benchmarks/posterior_geometry.py "
        f"--n {' '.join(map(str, args.n))} --seed {args.seed}`*\n"
    )
    print(
        "| N | class | points | dim | eigenvalues <= 0 / < 1 | drop at r = 0.3 (Gaussian) "
        "| drop at r = 1 (Gaussian) | Laplace k-hat | largest weight |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for n in args.n:
        s, y = simulate(n, args.seed)
        prep = prepare(prepare_data(s, y), atom_threshold=0.01, atom_min_count=10, compress_above=2048, n_bins=1024)
        priors = resolve_priors(None, prep.xs, prep.cs, 20)
        for c in (0, 1):
            g = geometry(prep.xs[c], prep.cs[c], priors[c], np.random.default_rng(args.seed))
            print(
                f"| {n} | {c} | {prep.xs[c].size} | {g['dim']} | {g['nonpositive']} / {g['raised']} "
                f"| {g['drop_0.3']:.2f} ({g['gauss_0.3']:.2f}) | {g['drop_1.0']:.1f} ({g['gauss_1.0']:.2f}) "
                f"| {'-' if not np.isfinite(g['khat']) else format(g['khat'], '.2f')} | {g['top_weight']:.2f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
