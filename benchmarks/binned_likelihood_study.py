"""Study: does the exact likelihood of binned scores let a Hamiltonian sampler converge where the
default sampler does not?

On compressed scores (more than ``compress_above`` rows) the default fit treats each bin centre
as a point with its count as weight. Its chains creep (map R-hat 1.3-1.5, bulk ESS 4-6 at
10^4-10^7 scores; ``docs/evidence/speed.md``), and Hamiltonian moves cannot help there: the
weighted point likelihood grows without bound as a component narrows onto a bin centre with
many scores, and the moves find those spikes. The likelihood of the bin counts themselves
(``bayescal.bayesian.pymc_model.build_model(..., binned=True)``: each bin's probability is the
mixture's mass between its edges) is bounded, so PyMC's NUTS can sample the mixture with the
allocations summed out.

For each replicate this script fits, on the same data, the default DPM (``DPMCalibrator``, the
sampler on bin centres) and each class's Gaussian mixture with NUTS on the binned likelihood
(the same K, hyperparameters from the same KDE-informed priors, the class prior's posterior
Beta(1 + n_1, 1 + n_0) as the default fit draws it), and reports for each the map's worst split
R-hat and lowest bulk / tail ESS over the data region (as ``diagnostics_["map"]``), the 95 % and
50 % bands' pointwise coverage of the true map on the study grid
(``benchmarks/dpm_coverage.py``), the mean map's MAE, the band's width and the wall time.

This is a study of a candidate, not of a route: the binned model is fitted here, outside the
calibrator. Usage::

    python benchmarks/binned_likelihood_study.py --truths monotone --n 100000 --seeds 2 \\
        --chains 4 --tune 500 --draws 500 | tee benchmarks/results/binned_likelihood.md
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
import warnings
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from dpm_coverage import region_grid, simulate

K = 20
N_BINS = 1024


def binned_class_data(t: np.ndarray, y: np.ndarray, n_bins: int = N_BINS) -> list[dict]:
    """Per class the occupied bins of :func:`bayescal.data.asinh_edges`: their edges (the
    outermost open, as finite values far beyond the data), centres and counts."""
    from bayescal.data import asinh_edges

    edges = asinh_edges(t, n_bins)
    far = 1e3 * (edges[-1] - edges[0])
    out = []
    for c in (0, 1):
        counts = np.histogram(t[y == c], edges)[0].astype(np.float64)
        occ = np.flatnonzero(counts > 0)
        lower, upper = edges[:-1][occ].copy(), edges[1:][occ].copy()
        centres = 0.5 * (lower + upper)
        lower[0], upper[-1] = edges[0] - far, edges[-1] + far
        out.append({"lower": lower, "upper": upper, "centres": centres, "counts": counts[occ]})
    return out


def fit_binned_nuts(data: dict, prior: dict, chains: int, tune: int, draws: int, seed: int) -> dict:
    """NUTS on one class's binned Gaussian mixture (PyMC, two processes): weight, mu, sigma
    draws (chains * draws, K), the mean tree depth and the divergences."""
    import pymc as pm

    from bayescal.bayesian.pymc_model import _set_data, build_model

    model = build_model(K, "gaussian", binned=True)
    _set_data(model, prior, **{k: data[k] for k in ("lower", "upper", "counts")})
    init = {"mu": np.asarray(prior["init_mu"]), "sigma": np.asarray(prior["init_sigma"])}
    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = pm.sample(
            draws=draws, tune=tune, chains=chains, cores=2, random_seed=seed, progressbar=False,
            initvals=init, compute_convergence_checks=False, target_accept=0.9,
            nuts_sampler="pymc",  # PyMC's own NUTS, as measured, whichever other samplers are installed
        )  # fmt: skip
    post, stats = idata.posterior, idata.sample_stats
    return {k: post[k].values.reshape(-1, K) for k in ("weight", "mu", "sigma")} | {
        "depth": float(stats["tree_depth"].values.mean()),
        "divergences": int(stats["diverging"].values.sum()),
    }


def band_row(draws: np.ndarray, shape: tuple[int, int], grid_s: np.ndarray, truth_vals: np.ndarray, kind: str) -> dict:
    """Coverage, MAE, width and convergence of map draws (S, grid) on the study grid."""
    from bayescal.bayesian.convergence import map_convergence
    from bayescal.data import from_working, to_working

    row = {}
    for q in (0.95, 0.5):
        lo, hi = np.quantile(draws, [(1 - q) / 2, (1 + q) / 2], axis=0)
        row[f"cov{round(100 * q)}"] = float(np.mean((lo <= truth_vals) & (truth_vals <= hi)))
        if q == 0.95:
            row["width"] = float(np.mean(hi - lo))
    row["mae"] = float(np.mean(np.abs(draws.mean(axis=0) - truth_vals)))
    grid_t = to_working(grid_s, kind)
    conv = map_convergence(draws, shape, grid_t, grid_t[[0, -1]], lambda v: from_working(v, kind))
    return row | {k: conv[k] for k in ("rhat_max", "ess_bulk_min", "ess_tail_min")}


def run_one(truth: str, n: int, seed: int, chains: int, tune: int, draws: int, n_bins: int = N_BINS) -> list[dict]:
    """The default fit and the binned NUTS fit of one replicate, as two rows."""
    from bayescal import make_calibrator
    from bayescal.bayesian.mixture import map_draws
    from bayescal.bayesian.priors import resolve_priors
    from bayescal.data import to_working

    s, y, true_map, kind = simulate(truth, n, seed)
    grid_s = region_grid(s)
    truth_vals = true_map(grid_s)
    rows = []

    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = make_calibrator("dpm", random_state=seed, score_kind=kind).fit(s, y)
    elapsed = time.perf_counter() - t0
    post = model.idata_["posterior"]
    shape = (post.sizes["chain"], post.sizes["draw"])
    default = model.calibration_map(grid_s).values.reshape(-1, grid_s.size)
    rows.append({"fit": "default (bin centres, Gibbs)"} | band_row(default, shape, grid_s, truth_vals, kind))
    rows[-1]["time_s"] = elapsed

    t = to_working(s, kind)
    data = binned_class_data(t, y, n_bins)
    priors = resolve_priors(None, [d["centres"] for d in data], [d["counts"] for d in data], K, "gaussian", strict=True)
    t0 = time.perf_counter()
    fits = [fit_binned_nuts(data[c], priors[c], chains, tune, draws, seed * 2 + c) for c in (0, 1)]
    elapsed = time.perf_counter() - t0
    S = fits[0]["mu"].shape[0]
    pi = np.random.default_rng(seed).beta(1.0 + data[1]["counts"].sum(), 1.0 + data[0]["counts"].sum(), size=S)
    params = [np.stack([f[k] for f in fits], axis=1) for k in ("weight", "mu", "sigma")]
    binned = map_draws(to_working(grid_s, kind), np.empty(0), pi, *params, np.zeros((S, 2, 0)))
    rows.append(
        {"fit": f"binned likelihood ({n_bins} bins), NUTS ({chains} x {draws})"}
        | band_row(binned, (chains, draws), grid_s, truth_vals, kind)
    )
    rows[-1] |= {
        "time_s": elapsed,
        "depth": max(f["depth"] for f in fits),
        "divergences": sum(f["divergences"] for f in fits),
    }
    return [{"truth": truth, "n": n, "seed": seed} | r for r in rows]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--truths", nargs="+", default=["monotone"])
    parser.add_argument("--n", nargs="+", type=float, default=[1e5])
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--tune", type=int, default=500)
    parser.add_argument("--draws", type=int, default=500)
    parser.add_argument("--bins", type=int, default=N_BINS, help="bins of the binned likelihood")
    args = parser.parse_args()
    started = datetime.now(UTC)
    print("# Binned likelihood with NUTS against the default fit\n")
    print(
        f"*Run {started:%Y-%m-%d %H:%M} UTC on {platform.system()} {platform.machine()}, "
        f"Python {platform.python_version()}; command: `python benchmarks/binned_likelihood_study.py "
        f"{' '.join(sys.argv[1:])}`. K = {K}; wall times, NUTS in two processes.*\n"
    )
    cols = ["truth", "n", "seed", "fit", "cov95", "cov50", "mae", "width", "rhat_max", "ess_bulk_min", "ess_tail_min",
            "depth", "divergences", "time_s"]  # fmt: skip
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for truth in args.truths:
        for n in args.n:
            for seed in range(args.seeds):
                for row in run_one(truth, int(n), seed, args.chains, args.tune, args.draws, args.bins):
                    cells = []
                    for c in cols:
                        v = row.get(c, "-")
                        cells.append(f"{v:.4f}" if isinstance(v, float) and c in ("mae", "width") else
                                     f"{v:.3f}" if isinstance(v, float) and c.startswith(("cov", "rhat", "depth")) else
                                     f"{v:.0f}" if isinstance(v, float) else str(v))  # fmt: skip
                    print("| " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
