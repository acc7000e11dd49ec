"""CalibratedClassifier against scikit-learn's CalibratedClassifierCV on real data.

Issue "From a scikit-learn classifier to a decision", item 1: log loss, Brier score and
time of :class:`bayescal.CalibratedClassifier` with bayescal's calibrators against
``sklearn.calibration.CalibratedClassifierCV`` with ``method="sigmoid"``, ``"isotonic"``
and ``"temperature"``, on the real datasets of ``benchmarks/dpm_realdata.py`` (same loaders,
same base classifiers; ISLP data installed with ``pip install --no-deps ISLP``).

**Protocol.** Each (dataset, split seed) is split 75 / 25 into fit / test, stratified. Every
method wraps a fresh clone of the base classifier and is fitted on the fit part with the same
``cv`` (5-fold ``StratifiedKFold``, shuffled with the split seed) and the same ``ensemble``
(``--ensemble``; default ``True`` for scikit-learn, ``"auto"`` for bayescal, which is
``True`` for frequentist calibrators and ``False`` for the DPM). Metrics on test: log loss
(clipped at machine epsilon) and Brier score (:mod:`bayescal.metrics`), and wall time of
fit plus predict. In each (dataset, classifier, seed) cell the methods are ranked (1 = best).

Outputs: a table of mean log loss, Brier, time and ranks per method, printed and saved as
JSON (``benchmarks/results/classifier_bench.json``, kept in git with the other studies' outputs).

It is slow with every dataset, classifier and the DPM (the DPM fits once per cell on all
out-of-fold scores); ``--quick`` runs one split of breast_cancer, OJ and Weekly with the
logistic regression and naive Bayes and no DPM.

**Measured** (2026-11-23, small subsets only, 2-core machine shared with other jobs, so the
times are loose): ``--quick`` (6 cells, 60 fits, 85 s) -- mean log loss / Brier / mean rank
on log loss: bayescal spline 0.4299 / 0.1436 / 2.67, Platt 0.4341 / 0.1451 / 4.17,
quadratic 0.4331 / 0.1448 / 4.33, beta 0.4354 / 0.1453 / 5.50, temperature 0.4365 / 0.1466 /
4.92, Venn-Abers 0.4381 / 0.1465 / 6.00, isotonic 0.5306 / 0.1468 / 9.00; scikit-learn
sigmoid 0.4409 / 0.1462 / 4.67, temperature 0.4366 / 0.1467 / 4.75, isotonic 0.5344 /
0.1470 / 9.00 (the two temperature scalings agree to 1e-4, as they should).
``--datasets breast_cancer OJ --classifiers logistic naive_bayes --seeds 1 --bayescal beta dpm``
(4 cells): DPM 0.2975 / 0.0914 / rank 2.00 (26 s a fit), scikit-learn temperature 0.3087 /
0.0952 / 2.00, beta 0.3086 / 0.0941 / 3.00, sigmoid 0.3174 / 0.0957 / 3.25, isotonic
0.4505 / 0.0937 / 4.75. Four to six cells decide nothing; run the full grid for a claim.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import rankdata

sys.path.insert(0, str(Path(__file__).resolve().parent))
from dpm_realdata import CLASSIFIERS, DATASETS, load, make_classifiers

SKLEARN = ("sigmoid", "isotonic", "temperature")
BAYESCAL = ("platt", "beta", "temperature", "isotonic", "quadratic", "spline", "venn_abers", "dpm")
RESULTS = Path(__file__).resolve().parent / "results" / "classifier_bench.json"


def _methods(sklearn_methods, bayescal_methods, seed: int, ensemble, dpm_params: dict) -> dict:
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.model_selection import StratifiedKFold

    from bayescal import CalibratedClassifier, make_calibrator

    cv = StratifiedKFold(5, shuffle=True, random_state=seed)
    out = {}
    for m in sklearn_methods:
        out[f"sklearn:{m}"] = lambda clf, m=m: CalibratedClassifierCV(
            clf, method=m, cv=cv, ensemble=True if ensemble == "auto" else ensemble
        )
    for m in bayescal_methods:

        def build(clf, m=m):
            method = make_calibrator("dpm", random_seed=seed, **dpm_params) if m == "dpm" else m
            return CalibratedClassifier(clf, method=method, cv=cv, ensemble=ensemble)

        out[f"bayescal:{m}"] = build
    return out


def run(
    datasets, classifier_names, sklearn_methods, bayescal_methods, seeds: int, ensemble, dpm_params: dict
) -> pd.DataFrame:
    from sklearn.base import clone
    from sklearn.model_selection import train_test_split

    from bayescal import metrics

    rows = []
    for name in datasets:
        X, y = load(name)
        for seed in range(seeds):
            X_fit, X_te, y_fit, y_te = train_test_split(X, y, test_size=0.25, stratify=y, random_state=seed)
            for clf_name, clf in make_classifiers(classifier_names, seed).items():
                cell = {"dataset": name, "classifier": clf_name, "seed": seed}
                for method, build in _methods(sklearn_methods, bayescal_methods, seed, ensemble, dpm_params).items():
                    t0 = time.perf_counter()
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        try:
                            p = build(clone(clf)).fit(X_fit, y_fit).predict_proba(X_te)[:, 1]
                            error = None
                        except Exception as exc:
                            p, error = None, f"{type(exc).__name__}: {exc}"
                    seconds = time.perf_counter() - t0
                    scores = (
                        {"log_loss": metrics.log_loss(y_te, p), "brier": metrics.brier_score(y_te, p)}
                        if p is not None
                        else {"log_loss": np.nan, "brier": np.nan}
                    )
                    rows.append(cell | {"method": method, "time_s": seconds, **scores, "error": error})
                line = " ".join(
                    f"{r['method']} {r['log_loss']:.3f}" for r in rows[-len(sklearn_methods) - len(bayescal_methods) :]
                )
                print(f"{name} {clf_name} seed {seed} (log loss): {line}", flush=True)
    return pd.DataFrame(rows)


def summarise(df: pd.DataFrame) -> str:
    df = df.copy()
    for m in ("log_loss", "brier"):
        worst = df[m].max()
        df[f"rank_{m}"] = df.groupby(["dataset", "classifier", "seed"])[m].transform(
            lambda v: rankdata(v.fillna(worst * 10 + 1).round(10))
        )
    table = df.groupby("method").agg(
        log_loss=("log_loss", "mean"),
        brier=("brier", "mean"),
        rank_log_loss=("rank_log_loss", "mean"),
        rank_brier=("rank_brier", "mean"),
        time_s=("time_s", "mean"),
        failures=("error", lambda e: int(e.notna().sum())),
    )
    return table.sort_values("rank_log_loss").to_string(float_format=lambda v: f"{v:.4f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=list(DATASETS))
    ap.add_argument("--classifiers", nargs="+", default=list(CLASSIFIERS), choices=list(CLASSIFIERS))
    ap.add_argument("--sklearn", nargs="*", default=list(SKLEARN), choices=list(SKLEARN))
    ap.add_argument("--bayescal", nargs="*", default=list(BAYESCAL), choices=list(BAYESCAL))
    ap.add_argument("--seeds", type=int, default=3, help="number of fit/test splits (default: %(default)s)")
    ap.add_argument(
        "--ensemble",
        default="auto",
        choices=["auto", "true", "false"],
        help="ensemble for both libraries ('auto': scikit-learn True, bayescal auto)",
    )
    ap.add_argument(
        "--quick", action="store_true", help="1 split of breast_cancer, OJ, Weekly; logistic and naive Bayes; no DPM"
    )
    ap.add_argument(
        "--dpm-param",
        action="append",
        default=[],
        metavar="NAME=JSON",
        help="DPM parameter, e.g. --dpm-param draws=300 (repeatable)",
    )
    ap.add_argument("--out", type=Path, default=RESULTS, help="JSON output (default: %(default)s)")
    args = ap.parse_args()
    ensemble = {"auto": "auto", "true": True, "false": False}[args.ensemble]
    dpm_params = {k: json.loads(v) for k, v in (p.split("=", 1) for p in args.dpm_param)}
    datasets, classifiers, bayescal_methods, seeds = args.datasets, args.classifiers, args.bayescal, args.seeds
    if args.quick:
        datasets, classifiers, seeds = ["breast_cancer", "OJ", "Weekly"], ["logistic", "naive_bayes"], 1
        bayescal_methods = [m for m in bayescal_methods if m != "dpm"]
    t0 = time.perf_counter()
    df = run(datasets, classifiers, args.sklearn, bayescal_methods, seeds, ensemble, dpm_params)
    text = summarise(df)
    print(f"\n{len(df)} fits in {time.perf_counter() - t0:.0f} s\n{text}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {"args": vars(args) | {"out": str(args.out)}, "rows": df.to_dict("records"), "summary": text},
            indent=1,
            default=str,
        )
    )


if __name__ == "__main__":
    main()
