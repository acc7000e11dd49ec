"""Does the convergence warning's remedy work? Default fits, then refits with the thinning it names.

For each truth of ``benchmarks/dpm_coverage.py``, N and seed the script fits the default DPM
calibrator, computes the thinning the convergence warning names
(:func:`bayescal.bayesian.convergence.thin_for_target`: the sweeps that would give the map
400 effective draws if its ESS grew in proportion), refits with
``route_options={"thin": k}`` (with ``--hmc-steps L`` also ``"hmc_steps": L``, the sampler's
Hamiltonian moves, where the scores are not compressed) and reports, for both fits, the map's worst split R-hat, lowest
bulk and tail ESS over the data region, whether it meets R-hat <= 1.01 and ESS >= 400
(``diagnostics_["map"]["meets_target"]``) and the fit time.

Usage::

    python benchmarks/convergence_remedy.py [--truths monotone piles ...] [--n 300 1000 10000]
        [--seeds 4] [--max-thin 400] | tee benchmarks/results/convergence_remedy.md

Refits whose thinning would exceed ``--max-thin`` are not run (reported as such). The table
at the end gives per (truth, N) the share of default and of remedied fits meeting the target.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def main() -> None:
    from dpm_coverage import DESIGN, HELD_OUT, simulate

    from bayescal import make_calibrator
    from bayescal.bayesian.convergence import thin_for_target

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--truths", nargs="+", default=["monotone", "piles", "plateau", "heavy"], choices=DESIGN + HELD_OUT)
    ap.add_argument("--n", nargs="+", type=int, default=[300, 1000, 10000])
    ap.add_argument("--seeds", type=int, default=4)
    ap.add_argument("--max-thin", type=int, default=400)
    ap.add_argument(
        "--hmc-steps",
        type=int,
        default=0,
        help="add route_options hmc_steps to the remedy where the scores are not compressed",
    )
    args = ap.parse_args()

    def fit(s, y, kind, seed, options):
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = make_calibrator("dpm", random_state=seed, score_kind=kind, route_options=options).fit(s, y)
        return model, time.perf_counter() - t0

    def fmt(conv, elapsed):
        return (
            f"{conv['rhat_max']:.3f} / {conv['ess_bulk_min']:.0f} / {conv['ess_tail_min']:.0f} / "
            f"{'yes' if conv['meets_target'] else 'no'} / {elapsed:.1f}"
        )

    print("| truth | N | seed | default: R-hat / bulk / tail ESS / meets / s | thin | remedy: same |")
    print("|---|---|---|---|---|---|")
    met: dict[tuple[str, int], list[tuple[bool, bool | None]]] = {}
    for truth in args.truths:
        for n in args.n:
            for seed in range(args.seeds):
                s, y, _, kind = simulate(truth, n, seed)
                model, elapsed = fit(s, y, kind, seed, None)
                conv = model.diagnostics_["map"]
                thin = thin_for_target(model.diagnostics_)
                if conv["meets_target"]:
                    remedy, ok = "not needed", None
                elif thin is None or thin > args.max_thin:
                    remedy, ok = f"not run (thin {thin} > {args.max_thin})", None
                else:
                    options = {"thin": thin}
                    if args.hmc_steps and not model.idata_.attrs["compressed"]:
                        options["hmc_steps"] = args.hmc_steps
                    fixed, elapsed2 = fit(s, y, kind, seed, options)
                    remedy, ok = fmt(fixed.diagnostics_["map"], elapsed2), fixed.diagnostics_["map"]["meets_target"]
                met.setdefault((truth, n), []).append((conv["meets_target"], ok))
                print(f"| {truth} | {n} | {seed} | {fmt(conv, elapsed)} | {thin} | {remedy} |", flush=True)
    print("\n| truth | N | default fits meeting the target | after the remedy (of those run) |")
    print("|---|---|---|---|")
    for (truth, n), items in met.items():
        run = [ok for _, ok in items if ok is not None]
        after = sum(d or bool(ok) for d, ok in items)
        print(
            f"| {truth} | {n} | {sum(d for d, _ in items)} / {len(items)} | {after} / {len(items)} ({len(run)} run) |"
        )


if __name__ == "__main__":
    main()
