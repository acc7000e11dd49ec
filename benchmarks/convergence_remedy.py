"""Does the convergence warning's remedy work? Default fits, then refits with the remedy it names.

For each truth of ``benchmarks/dpm_coverage.py``, N and seed the script fits the default DPM
calibrator and, when the fit misses R-hat <= 1.01 and ESS >= 400, refits it with the remedy
the convergence warning names (:func:`bayescal.bayesian.convergence.remedy`: long Hamiltonian
trajectories). It reports, for both fits, the map's worst split R-hat, lowest bulk and tail
ESS over the data region, whether it meets R-hat <= 1.01 and ESS >= 400
(``diagnostics_["map"]["meets_target"]``), the 95 % band's pointwise coverage of the true map
and the posterior-mean map's mean absolute error (on 200 points between the 2.5 % and 97.5 %
quantiles of the scores, as ``benchmarks/dpm_coverage.py``), and the fit time.

Usage::

    python benchmarks/convergence_remedy.py [--truths monotone piles ...] [--n 300 1000 10000]
        [--seeds 4] | tee benchmarks/results/convergence_remedy_long_hmc.md

``--remedy-options JSON`` refits with those ``route_options`` instead of the named remedy, to
measure another one on the same replicates, e.g. ``--remedy-options '{"thin": 20}'``;
``--remedy-params JSON``, given with it, sets other calibrator parameters of that refit
(``'{"draws": 1000}'``).
The table at the end gives per (truth, N) the share of default and of remedied fits meeting
the target, and over the refitted replicates the mean 95 % coverage and MAE of the default
fits and of the refits. Results: ``benchmarks/results/convergence_remedy*.md``
(``convergence_remedy_long_hmc_robust_scale.md`` and
``convergence_remedy_long_hmc_dispersed_robust_scale.md``: the remedy from the shared start and
from chains started apart under the current priors, 2026-12-03;
``convergence_remedy_long_hmc_dispersed.md``: the remedy's moves from chains started apart,
``--remedy-options '{"hmc_steps": 300, "start": "dispersed"}'``, on the replicates of
``convergence_remedy_long_hmc.md`` at 10^4; its default fits are the default's of 2026-11-28, whose
chains start apart there too; ``convergence_remedy_hmc20_dispersed.md``: short trajectories
with eight times the draws instead, ``--remedy-options '{"hmc_steps": 20, "start": "dispersed"}'
--remedy-params '{"draws": 4000}'``, on the five design truths' replicates, at a quarter of the
long trajectories' time; ``convergence_remedy_long_hmc_2000_dispersed.md``: the long trajectories
from chains started apart with twice the draws, ``--remedy-params '{"draws": 2000}'``, on the
same replicates; ``convergence_remedy_hmc60_2000_dispersed.md``: trajectories of 60 steps
with twice the draws, ``--remedy-options '{"hmc_steps": 60, "start": "dispersed"}' --remedy-params
'{"draws": 2000}'``, on the same replicates, at a quarter of the long trajectories' time); the files
without ``long_hmc`` in their names were written by earlier versions of this script, when
the warning named a thinning (``route_options={"thin": k}``, on raw scores the sweeps that
would give 400 effective draws if the ESS grew in proportion, with ``--hmc-steps 20`` short
Hamiltonian moves; on compressed scores ten times the fit's sweeps).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
import warnings
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))


def main() -> None:
    from dpm_coverage import DESIGN, HELD_OUT, region_grid, simulate

    from bayescal import make_calibrator
    from bayescal.bayesian.convergence import remedy

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--truths", nargs="+", default=["monotone", "piles", "plateau", "heavy"], choices=DESIGN + HELD_OUT)
    ap.add_argument("--n", nargs="+", type=int, default=[300, 1000, 10000])
    ap.add_argument("--seeds", type=int, default=4)
    ap.add_argument(
        "--remedy-options",
        type=json.loads,
        default=None,
        help="route_options of the refit (JSON), instead of the remedy the warning names",
    )
    ap.add_argument(
        "--remedy-params",
        type=json.loads,
        default=None,
        help="other calibrator parameters of the refit (JSON), e.g. '{\"draws\": 1000}'",
    )
    args = ap.parse_args()
    for name in ("remedy_options", "remedy_params"):
        value = getattr(args, name)
        if value is not None and not isinstance(value, dict):
            ap.error(f"--{name.replace('_', '-')} must be a JSON object, e.g. '{{\"hmc_steps\": 300}}'")

    def fit(s, y, kind, seed, options, params=None):
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = make_calibrator(
                "dpm", random_state=seed, score_kind=kind, route_options=options, **(params or {})
            ).fit(s, y)
        return model, time.perf_counter() - t0

    def band_error(model, s, true_map):
        """95 % pointwise coverage of the true map and the mean map's MAE over the data region."""
        grid = region_grid(s)
        truth_vals = true_map(grid)
        draws = model.calibration_map(grid).values.reshape(-1, grid.size)
        lo, hi = np.quantile(draws, [0.025, 0.975], axis=0)
        mae = np.mean(np.abs(model.predict_proba(grid)[:, 1] - truth_vals))
        return float(np.mean((lo <= truth_vals) & (truth_vals <= hi))), float(mae)

    def fmt(conv, elapsed, cov, mae):
        return (
            f"{conv['rhat_max']:.3f} / {conv['ess_bulk_min']:.0f} / {conv['ess_tail_min']:.0f} / "
            f"{'yes' if conv['meets_target'] else 'no'} / {cov:.3f} / {mae:.4f} / {elapsed:.1f}"
        )

    print(
        f"*{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {platform.system()} {platform.machine()}, "
        f"Python {platform.python_version()}; `python benchmarks/convergence_remedy.py {' '.join(sys.argv[1:])}`*\n"
    )
    print(
        "| truth | N | seed | default: R-hat / bulk / tail ESS / meets / 95 % cov / MAE / s | remedy | remedy: same |"
    )
    print("|---|---|---|---|---|---|")
    if args.remedy_options is None:
        if args.remedy_params is not None:
            ap.error("--remedy-params sets the parameters of a refit with --remedy-options; pass both")
        options, params = remedy()
    else:
        options, params = args.remedy_options, args.remedy_params or {}
    label = json.dumps(options) + (f" {json.dumps(params)}" if params else "")
    met: dict[tuple[str, int], list[tuple[bool, bool | None]]] = {}
    paired: dict[tuple[str, int], list[tuple[float, float, float, float]]] = {}
    for truth in args.truths:
        for n in args.n:
            for seed in range(args.seeds):
                s, y, true_map, kind = simulate(truth, n, seed)
                model, elapsed = fit(s, y, kind, seed, None)
                conv = model.diagnostics_["map"]
                cov, mae = band_error(model, s, true_map)
                if conv["meets_target"]:
                    outcome, ok = "not needed", None
                else:
                    fixed, elapsed2 = fit(s, y, kind, seed, options, params)
                    cov2, mae2 = band_error(fixed, s, true_map)
                    outcome = fmt(fixed.diagnostics_["map"], elapsed2, cov2, mae2)
                    ok = fixed.diagnostics_["map"]["meets_target"]
                    paired.setdefault((truth, n), []).append((cov, cov2, mae, mae2))
                met.setdefault((truth, n), []).append((conv["meets_target"], ok))
                print(f"| {truth} | {n} | {seed} | {fmt(conv, elapsed, cov, mae)} | {label} | {outcome} |", flush=True)
    print(
        "\n| truth | N | default fits meeting the target | after the remedy (of those run) "
        "| 95 % coverage, default -> remedy (se of the difference) | MAE, default -> remedy |"
    )
    print("|---|---|---|---|---|---|")
    for (truth, n), items in met.items():
        run = [ok for _, ok in items if ok is not None]
        after = sum(d or bool(ok) for d, ok in items)
        pairs = np.array(paired.get((truth, n), np.empty((0, 4))))
        if len(pairs) > 1:
            diff = pairs[:, 1] - pairs[:, 0]
            se = diff.std(ddof=1) / np.sqrt(len(diff))
            cov_text = f"{pairs[:, 0].mean():.3f} -> {pairs[:, 1].mean():.3f} ({se:.3f})"
            mae_text = f"{pairs[:, 2].mean():.3g} -> {pairs[:, 3].mean():.3g}"
        else:
            cov_text = mae_text = "-"
        print(
            f"| {truth} | {n} | {sum(d for d, _ in items)} / {len(items)} | {after} / {len(items)} ({len(run)} run) "
            f"| {cov_text} | {mae_text} |"
        )


if __name__ == "__main__":
    main()
