"""Coverage study of the variational route ``inference="vi"``: its candidate methods side by side.

Each candidate is a ``route_options`` setting of :func:`bayescal.bayesian.vi.fit_vi`; the
sampler route (``gibbs``) is run on the same replicates as the reference. For every
(candidate, truth, N, seed) the DPM calibrator is fitted and scored exactly as in
``benchmarks/dpm_coverage.py`` (the same truths, grid, coverage of the 50 / 80 / 95 % bands
over the data region, data-weighted coverage, MAE of the posterior-mean map against the KDE
calibrator's, band width, fit time), plus the per-class reliability diagnostics of the route
(Pareto k-hat, ELBO spread between paths, convergence). Rows are appended to ``--out``; the
summary table (means over seeds, standard error of the 95 % coverage) is printed at the end.

Usage (small settings; the docs page ``docs/evidence/vi.md`` shows the command it used)::

    python benchmarks/vi_study.py --truths monotone piles plateau --n 300 1000 --seeds 3 \\
        --candidates gibbs pathfinder dadvi dadvi_lr fullrank_advi

``bootstrap`` is a posterior bootstrap of the class mixture's mode
(``benchmarks/posterior_bootstrap.py``), not a route of the package.
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from dpm_coverage import FIELDS, TRUTHS, _rows, cell_summary, cells, run_one

CANDIDATES: dict[str, tuple[str, dict]] = {
    "gibbs": ("gibbs", {}),
    "pathfinder": ("vi", {"method": "pathfinder"}),
    "dadvi": ("vi", {"method": "dadvi"}),  # the route's default: mean-field DADVI
    "dadvi_lr": ("vi", {"method": "dadvi", "linear_response": True}),
    "fullrank_advi": ("vi", {"method": "fullrank_advi"}),
    # a posterior bootstrap of the mode (benchmarks/posterior_bootstrap.py), registered at run time
    "bootstrap": ("bootstrap", {}),
}
VI_FIELDS = ["pareto_k_max", "elbo_spread_max", "converged"]


def run_candidate(name: str, truth: str, n: int, seed: int) -> dict:
    """One fit of candidate ``name`` on a replicate, scored as in ``dpm_coverage.run_one``."""
    route, route_options = CANDIDATES[name]
    if route == "bootstrap":
        from posterior_bootstrap import register

        register()
    options = {"components": "gaussian"} | ({"route_options": route_options} if route_options else {})
    captured = {}
    from bayescal.bayesian.dpm import DPMCalibrator

    original = DPMCalibrator._fit

    def spy(self, *args, **kwargs):
        out = original(self, *args, **kwargs)
        captured["diagnostics"] = self.diagnostics_
        return out

    DPMCalibrator._fit = spy
    try:
        row = run_one(truth, n, seed, route, options, ["kde"])
    finally:
        DPMCalibrator._fit = original
    row["route"] = name
    diag = captured.get("diagnostics", {})
    per_class = [diag.get("gaussian", {}).get(f"class_{c}", {}) for c in (0, 1)]
    row["pareto_k_max"] = max(float(d.get("pareto_k", np.nan)) for d in per_class)
    row["elbo_spread_max"] = max(float(d.get("elbo_spread", np.nan)) for d in per_class)
    row["converged"] = all(bool(d.get("converged", True)) for d in per_class)
    return row


def _or_dash(value: float, spec: str) -> str:
    """``value`` formatted by ``spec``, or "-" where the route has no such number (the sampler's k-hat)."""
    return format(value, spec) if np.isfinite(value) else "-"


def summarise(path: Path) -> str:
    """Means over seeds per (candidate, truth, N) as a markdown table."""
    head = (
        "| candidate | truth | N | seeds | 95 % cov (se) | 80 % | 50 % | 95 % data-weighted | MAE | MAE KDE | width "
        "| k-hat max | ELBO spread | converged | time s |"
    )
    lines = [head, "|---" * (head.count("|") - 1) + "|"]
    rank = {name: i for i, name in enumerate(CANDIDATES)}
    for key, sel in cells(_rows(path), lambda route: rank.get(route, 99)):
        c = cell_summary(sel)
        conv = sum(r["converged"] == "True" for r in sel)
        lines.append(
            f"| {key[0]} | {key[1]} | {key[2]} | {c['seeds']} | {c['cov95']:.3f} ({c['cov95_se']:.3f}) "
            f"| {c['cov80']:.3f} | {c['cov50']:.3f} | {c['cov95_data']:.3f} | {c['mae']:.4f} "
            f"| {c['others'].get('kde', float('nan')):.4f} | {c['width']:.3f} | {_or_dash(c['pareto_k_max'], '.2f')} "
            f"| {_or_dash(c['elbo_spread_max'], '.1f')} | {conv}/{len(sel)} | {c['time_s']:.1f} |"
        )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--truths", nargs="+", default=["monotone", "piles", "plateau"], choices=list(TRUTHS))
    ap.add_argument("--n", nargs="+", type=int, default=[300, 1000])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--candidates", nargs="+", default=list(CANDIDATES), choices=list(CANDIDATES))
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "vi_study.csv")
    ap.add_argument("--summarise", action="store_true", help="only print the table of --out")
    args = ap.parse_args()
    if not args.summarise:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        new = not args.out.exists()
        with open(args.out, "a", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=FIELDS + VI_FIELDS)
            if new:
                writer.writeheader()
            for name in args.candidates:
                for truth in args.truths:
                    for n in args.n:
                        for seed in range(args.first_seed, args.first_seed + args.seeds):
                            t0 = time.perf_counter()
                            row = run_candidate(name, truth, n, seed)
                            writer.writerow(row)
                            fh.flush()
                            print(
                                f"{name} {truth} N={n} seed={seed}: cov95={row['cov95']:.3f} mae={row['mae']:.4f} "
                                f"k-hat={row['pareto_k_max']:.2f} fit {row['time_s']:.1f} s "
                                f"(total {time.perf_counter() - t0:.1f} s)",
                                flush=True,
                            )
    print(summarise(args.out))


if __name__ == "__main__":
    main()
