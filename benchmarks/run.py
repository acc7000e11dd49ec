"""Benchmark suite: speed, memory and quality of every calibrator against the anchors.

Everything is measured in the same run on the same data, so the ratios are meaningful on
any machine:

* **anchors**: scikit-learn's isotonic regression (``IsotonicRegression(out_of_bounds="clip")``)
  and sigmoid calibration (``sklearn.calibration._SigmoidCalibration``, what
  ``CalibratedClassifierCV(method="sigmoid")`` fits), betacal's ``BetaCalibration`` and
  venn-abers' ``VennAbers`` when installed (extra ``bench``). netcal's BBQ and ENIR are
  measured when netcal imports (it needs PyTorch, which its wheel pulls in with CUDA).
* **data**: scores from a known truth (Beta(2,5) negatives vs Beta(5,2) positives, pi = 0.4),
  N for fitting and N new scores to predict; quality on 10^5 held-out scores.
* **rows**: fit and predict seconds (best of ``--repeat``), peak traced memory (a separate
  run under ``tracemalloc``), the ratio of fit + predict to scikit-learn isotonic and
  sigmoid, and quality: ECE (15 equal-mass bins), Brier score, log loss, mean absolute
  error against the true map, and the 95% band's coverage of the true map (Bayesian ones).
* **large data**: ``--dask-n`` scores (10^8 by default) from a chunked Dask array reduced to
  a ScoreSummary and calibrated with the DPM default, with total time and peak RSS;
  predict throughput on 10^7 numpy scores; the time of ``import bayescal``.

Usage::

    python benchmarks/run.py                               # N = 1e3 .. 1e7, Dask 1e8
    python benchmarks/run.py --sizes 1000 100000 --calibrators isotonic kde --dask-n 0
    python benchmarks/run.py --json results.json           # keep the numbers for later runs
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import threading
import time
import tracemalloc
from collections.abc import Callable

import numpy as np
from _timing import best_of

TRUTH = "beta_skewed"
N_TEST = 100_000


# ---------------------------------------------------------------------------- methods
def anchors() -> dict[str, Callable]:
    """Fit-and-predict callables of the other libraries: ``fn(s, y, q) -> P(y=1 | q)``."""
    from scipy.special import logit
    from sklearn.calibration import _SigmoidCalibration
    from sklearn.isotonic import IsotonicRegression

    def lg(v):
        return logit(np.clip(v, 1e-12, 1 - 1e-12))

    out: dict[str, Callable] = {
        "sklearn_isotonic": lambda s, y, q: (
            IsotonicRegression(out_of_bounds="clip", y_min=0, y_max=1).fit(s, y).predict(q)
        ),
        "sklearn_sigmoid": lambda s, y, q: _SigmoidCalibration().fit(lg(s), y).predict(lg(q)),
    }
    try:
        from betacal import BetaCalibration as _Beta

        out["betacal_abm"] = lambda s, y, q: _Beta(parameters="abm").fit(s.reshape(-1, 1), y).predict(q.reshape(-1, 1))
    except ImportError:
        pass
    try:
        from venn_abers import VennAbers

        def venn(s, y, q):
            va = VennAbers()
            va.fit(np.c_[1 - s, s], y, precision=4)
            return va.predict_proba(np.c_[1 - q, q])[0][:, 1]

        out["venn_abers"] = venn
    except ImportError:
        pass
    try:  # pragma: no cover - needs PyTorch
        from netcal.binning import BBQ as _NBBQ
        from netcal.binning import ENIR as _NENIR

        out["netcal_bbq"] = lambda s, y, q: _NBBQ().fit(s, y).transform(q)
        out["netcal_enir"] = lambda s, y, q: _NENIR().fit(s, y).transform(q)
    except Exception:
        pass
    return out


def ours(names: list[str] | None) -> dict[str, type]:
    import bayescal
    from bayescal._registry import get_calibrator_class

    out = {}
    for name in names or bayescal.calibrators():
        cls = get_calibrator_class(name)
        if not cls.feature_aware:  # MBCT has its own benchmark (bench_mbct.py): it needs features
            out[name] = cls
    return out


# ---------------------------------------------------------------------------- measuring
def simulated(n: int, seed: int):
    from bayescal.datasets import simulate_scores

    return simulate_scores(TRUTH, n, random_state=seed)


def traced_peak_mib(fn: Callable) -> float:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def quality(p_test: np.ndarray, y_test: np.ndarray, true_test: np.ndarray) -> dict[str, float]:
    from bayescal import metrics

    p = np.clip(p_test, 0, 1)
    return {
        "ece": metrics.ece(y_test, p, n_bins=15, strategy="quantile"),
        "brier": metrics.brier_score(y_test, p),
        "log_loss": metrics.log_loss(y_test, p),
        "mae_true_map": float(np.mean(np.abs(p - true_test))),
    }


def band_coverage(est, data) -> float:
    """Share of grid points (pooled 2.5%..97.5% score quantiles) whose 95% band holds the true map."""
    lo, hi = np.quantile(data.scores, [0.025, 0.975])
    grid = np.linspace(lo, hi, 200)
    band = est.credible_band(grid, ci_prob=0.95)
    truth = data.true_map(grid)
    return float(np.mean((band.sel(ci_bound="lower").values <= truth) & (truth <= band.sel(ci_bound="upper").values)))


def measure(sizes: list[int], calibrators: list[str] | None, repeat: int, max_seconds: float) -> list[dict]:
    test = simulated(N_TEST, seed=12345)
    true_test = test.true_map(test.scores)
    rows: list[dict] = []
    for_anchor = anchors()
    mine = ours(calibrators)
    too_slow: set[str] = set()
    for n in sizes:
        data = simulated(n, seed=n)
        s, y = data.scores, data.y
        q = simulated(n, seed=n + 1).scores
        for name, fn in for_anchor.items():
            if name in too_slow:
                continue
            fn(s[:500], y[:500], q[:500])  # warm-up
            secs, _ = best_of(lambda: fn(s, y, q), repeat if n <= 100_000 else 1)
            p_test = fn(s, y, test.scores)
            row = {
                "method": name,
                "n": n,
                "fit_s": np.nan,
                "predict_s": np.nan,
                "total_s": secs,
                "peak_mib": traced_peak_mib(lambda: fn(s, y, q)) if n <= 1_000_000 else np.nan,
                **quality(p_test, test.y, true_test),
                "coverage": np.nan,
            }
            rows.append(row)
            too_slow |= {name} if secs > max_seconds else set()
        for name, cls in mine.items():
            if name in too_slow:
                continue
            cls().fit(s[:500], y[:500]).predict_proba(q[:500])  # warm-up (imports, caches)
            fit_s, est = best_of(lambda: cls().fit(s, y), repeat if n <= 100_000 else 1)
            pred_s, _ = best_of(lambda: est.predict_proba(q), repeat)
            row = {
                "method": name,
                "n": n,
                "fit_s": fit_s,
                "predict_s": pred_s,
                "total_s": fit_s + pred_s,
                "peak_mib": traced_peak_mib(lambda: cls().fit(s, y).predict_proba(q)) if n <= 1_000_000 else np.nan,
                **quality(est.predict_proba(test.scores)[:, 1], test.y, true_test),
                "coverage": band_coverage(est, data) if hasattr(est, "idata_") else np.nan,
            }
            rows.append(row)
            too_slow |= {name} if row["total_s"] > max_seconds else set()
        print(f"  measured N={n:.0e}", file=sys.stderr, flush=True)
    for row in rows:
        ref = {r["method"]: r["total_s"] for r in rows if r["n"] == row["n"]}
        row["vs_sk_isotonic"] = row["total_s"] / ref["sklearn_isotonic"]
        row["vs_sk_sigmoid"] = row["total_s"] / ref["sklearn_sigmoid"]
    return rows


def predict_throughput(names: list[str] | None, n_predict: int = 10_000_000) -> dict[str, dict[str, float]]:
    """Scores per second of ``predict_proba`` on numpy input, each calibrator fitted on 10^5.

    Two query sets: new scores from the same population as the fit (what applying a
    calibrator means) and uniform scores over [0, 1] (scores outside the fitted range cost
    the Bayesian calibrator an exact evaluation each).
    """
    data = simulated(100_000, seed=1)
    queries = {"population": simulated(n_predict, seed=2).scores, "uniform": np.random.default_rng(2).random(n_predict)}
    out: dict[str, dict[str, float]] = {}
    for name, cls in ours(names).items():
        est = cls().fit(data.scores, data.y)
        out[name] = {kind: n_predict / best_of(lambda q=q: est.predict_proba(q), 2)[0] for kind, q in queries.items()}
    return out


class PeakRSS:
    """Peak resident memory of this process (sampled every 20 ms by a thread), in MiB."""

    def __enter__(self):
        import psutil

        self._proc, self._stop, self.peak = psutil.Process(), threading.Event(), 0.0
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()
        return self

    def _watch(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, self._proc.memory_info().rss / 2**20)
            time.sleep(0.02)

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def dask_route(n: int, chunk: int = 5_000_000) -> dict[str, float]:
    """10^8-scale: summarise a chunked Dask array where it lives, fit the DPM default on it."""
    import dask
    import dask.array as da

    import bayescal
    from bayescal.data import ScoreSummary

    rng = da.random.default_rng(7)
    y = (rng.random(n, chunks=chunk) < 0.4).astype(np.int8)
    s = da.where(y == 1, rng.beta(5, 2, n, chunks=chunk), rng.beta(2, 5, n, chunks=chunk))
    with PeakRSS() as mem, dask.config.set(scheduler="threads", num_workers=2):
        t0 = time.perf_counter()
        summary = ScoreSummary.from_dask(s, y)
        t1 = time.perf_counter()
        est = bayescal.make_calibrator("dpm", random_seed=0).fit(summary)
        t2 = time.perf_counter()
        lazy = est.predict_proba(s[:10_000_000])[:, 1].mean().compute()
        t3 = time.perf_counter()
    return {
        "n": n,
        "summarise_s": t1 - t0,
        "fit_s": t2 - t1,
        "total_s": t2 - t0,
        "lazy_predict_1e7_s": t3 - t2,
        "peak_rss_mib": mem.peak,
        "mean_p": float(lazy),
    }


def import_seconds() -> float:
    code = "import time; t=time.perf_counter(); import bayescal; print(time.perf_counter()-t)"
    runs = [
        float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
        for _ in range(3)
    ]
    return min(runs)


# ---------------------------------------------------------------------------- report
def print_table(rows: list[dict], sizes: list[int]) -> None:
    print(
        "\nfit on N + predict N new scores; ratio of the total to scikit-learn isotonic (iso) and sigmoid (sig);"
        f" quality on {N_TEST:.0e} held-out scores of the truth '{TRUTH}'"
    )
    head = (
        f"{'method':<17}{'N':>8}{'fit s':>9}{'pred s':>9}{'total s':>9}{'x iso':>7}{'x sig':>7}{'peak MiB':>9}"
        f"{'ECE':>8}{'Brier':>8}{'logloss':>8}{'MAE':>8}{'cover':>7}"
    )
    print(head)
    for n in sizes:
        for r in (r for r in rows if r["n"] == n):
            print(
                f"{r['method']:<17}{n:>8.0e}{r['fit_s']:>9.3f}{r['predict_s']:>9.3f}{r['total_s']:>9.3f}"
                f"{r['vs_sk_isotonic']:>7.2f}{r['vs_sk_sigmoid']:>7.2f}{r['peak_mib']:>9.1f}{r['ece']:>8.4f}"
                f"{r['brier']:>8.4f}{r['log_loss']:>8.4f}{r['mae_true_map']:>8.4f}{r['coverage']:>7.2f}"
            )


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000, 1_000_000, 10_000_000])
    parser.add_argument("--calibrators", nargs="+", default=None, help="registry names (default: all)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--max-seconds",
        type=float,
        default=120.0,
        help="skip larger N for a method once one cell takes longer than this",
    )
    parser.add_argument("--dask-n", type=float, default=1e8, help="scores for the Dask route (0 skips it)")
    parser.add_argument("--json", default=None, help="also write the results as JSON here")
    args = parser.parse_args(argv)

    print(f"bayescal benchmark on {platform.machine()}, Python {platform.python_version()}")
    results: dict = {"sizes": args.sizes, "rows": measure(args.sizes, args.calibrators, args.repeat, args.max_seconds)}
    print_table(results["rows"], args.sizes)
    results["import_s"] = import_seconds()
    print(f"\nimport bayescal: {results['import_s']:.3f} s")
    results["predict_per_s"] = predict_throughput(args.calibrators)
    print(
        "predict throughput on 1e7 numpy scores (scores/s; population / uniform queries): "
        + ", ".join(f"{k} {v['population']:.2e} / {v['uniform']:.2e}" for k, v in results["predict_per_s"].items())
    )
    if args.dask_n > 0:
        results["dask"] = dask_route(int(args.dask_n))
        d = results["dask"]
        print(
            f"Dask route, {d['n']:.0e} scores: summarise {d['summarise_s']:.1f} s + DPM fit {d['fit_s']:.1f} s = "
            f"{d['total_s']:.1f} s; peak RSS {d['peak_rss_mib']:.0f} MiB; lazy predict of 1e7 {d['lazy_predict_1e7_s']:.1f} s"
        )
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=2, default=float)
    return results


if __name__ == "__main__":
    main()
