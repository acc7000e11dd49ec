"""Real-data comparison of the DPM calibrator with beta calibration and isotonic regression (issue item 4).

Six real binary datasets that install offline from the package registry:

* ``breast_cancer``: scikit-learn's bundled Wisconsin diagnostic data (569 rows);
* from the ``ISLP`` package (the data of "An Introduction to Statistical Learning"; install
  with ``pip install --no-deps ISLP``, its CSV files are read without importing it):
  ``Default`` (credit default, 10000 rows, 3 % positives), ``Caravan`` (insurance purchase,
  5822 rows, 6 %), ``OJ`` (orange-juice brand, 1070), ``College`` (private or public, 777),
  ``Weekly`` (weekly S&P direction from lagged returns and volume, 1089; ``Today``, which
  defines the label, is dropped).

Base classifiers: logistic regression, a linear SVM (scores = logistic of the decision
value, as in Naeini et al.), Gaussian naive Bayes (exact 0/1 probabilities are common: the
DPM's atoms) and gradient boosting. Each (dataset, split seed) is split 50/25/25 into
train / calibration / test, stratified; the classifier fits on train, the calibrators on
the calibration scores, and Brier score and log loss are measured on the test scores. For
each (dataset, classifier, seed) the three calibrators are ranked (1 = best, ties share the
mean rank); the table gives the average ranks and the mean metrics.

Usage::

    python benchmarks/dpm_realdata.py [--seeds 2] [--datasets breast_cancer Default ...]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
from scipy.special import expit
from scipy.stats import rankdata

CALIBRATORS = ("dpm", "beta", "isotonic")


def _islp(name: str) -> pd.DataFrame:
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        path = distribution("ISLP").locate_file(f"ISLP/data/{name}.csv")
    except PackageNotFoundError:
        raise SystemExit("the ISLP data package is missing: pip install --no-deps ISLP") from None
    return pd.read_csv(path)


def load(name: str) -> tuple[np.ndarray, np.ndarray]:
    """Features (numeric, one-hot for categories) and 0/1 labels of a dataset."""
    if name == "breast_cancer":
        from sklearn.datasets import load_breast_cancer

        data = load_breast_cancer()
        return data.data, data.target
    target = {"Default": ("default", "Yes"), "Caravan": ("Purchase", "Yes"), "OJ": ("Purchase", "MM"),
              "College": ("Private", "Yes"), "Weekly": ("Direction", "Up")}[name]
    df = _islp(name)
    y = (df.pop(target[0]) == target[1]).to_numpy().astype(int)
    if name == "Weekly":
        df = df.drop(columns=["Today", "Year"])
    X = pd.get_dummies(df, drop_first=True, dtype=float).to_numpy(dtype=float)
    return X, y


DATASETS = ("breast_cancer", "Default", "Caravan", "OJ", "College", "Weekly")


def classifiers(seed: int) -> dict:
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.naive_bayes import GaussianNB
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import LinearSVC

    return {
        "logistic": make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000)),
        "linear_svm": make_pipeline(StandardScaler(), LinearSVC(C=0.1, random_state=seed)),
        "naive_bayes": GaussianNB(),
        "boosting": HistGradientBoostingClassifier(random_state=seed),
    }


def scores(model, X: np.ndarray) -> np.ndarray:
    if hasattr(model, "predict_proba"):
        return model.predict_proba(X)[:, 1]
    return expit(model.decision_function(X))


def run(datasets, seeds: int) -> pd.DataFrame:
    from sklearn.model_selection import train_test_split

    from bayescal import make_calibrator, metrics

    rows = []
    for name in datasets:
        X, y = load(name)
        for seed in range(seeds):
            X_tr, X_rest, y_tr, y_rest = train_test_split(X, y, test_size=0.5, stratify=y, random_state=seed)
            X_cal, X_te, y_cal, y_te = train_test_split(X_rest, y_rest, test_size=0.5, stratify=y_rest,
                                                        random_state=seed)
            for clf_name, clf in classifiers(seed).items():
                clf.fit(X_tr, y_tr)
                s_cal, s_te = scores(clf, X_cal), scores(clf, X_te)
                base = {"dataset": name, "classifier": clf_name, "seed": seed}
                rows.append(base | {"calibrator": "uncalibrated", "brier": metrics.brier_score(y_te, s_te),
                                    "log_loss": metrics.log_loss(y_te, s_te), "time_s": 0.0})
                for cal_name in CALIBRATORS:
                    params = {"random_seed": seed} if cal_name == "dpm" else {}
                    t0 = time.perf_counter()
                    p = make_calibrator(cal_name, **params).fit(s_cal, y_cal).predict_proba(s_te)[:, 1]
                    rows.append(base | {"calibrator": cal_name, "brier": metrics.brier_score(y_te, p),
                                        "log_loss": metrics.log_loss(y_te, p), "time_s": time.perf_counter() - t0})
                last = rows[-4:]
                print(" ".join(f"{r['calibrator']}: brier {r['brier']:.4f} ll {r['log_loss']:.4f}" for r in last),
                      f"| {name} {clf_name} seed {seed}", flush=True)
    return pd.DataFrame(rows)


def summarise(df: pd.DataFrame) -> str:
    cal = df[df["calibrator"].isin(CALIBRATORS)].copy()
    for metric in ("brier", "log_loss"):
        cal[f"rank_{metric}"] = cal.groupby(["dataset", "classifier", "seed"])[metric].transform(
            lambda v: rankdata(np.round(v.to_numpy(), 10)))
    table = cal.groupby("calibrator")[["rank_brier", "rank_log_loss", "brier", "log_loss", "time_s"]].mean()
    unc = df[df["calibrator"] == "uncalibrated"][["brier", "log_loss"]].mean()
    lines = [f"{cal.groupby(['dataset', 'classifier', 'seed']).ngroups} cases "
             f"({df['dataset'].nunique()} datasets x {df['classifier'].nunique()} classifiers x "
             f"{df['seed'].nunique()} splits)",
             "| calibrator | mean rank Brier | mean rank log loss | mean Brier | mean log loss | mean time s |",
             "|---|---|---|---|---|---|"]
    for name, r in table.loc[list(CALIBRATORS)].iterrows():
        lines.append(f"| {name} | {r.rank_brier:.2f} | {r.rank_log_loss:.2f} | {r.brier:.4f} | {r.log_loss:.4f} | "
                     f"{r.time_s:.2f} |")
    lines.append(f"| uncalibrated | - | - | {unc.brier:.4f} | {unc.log_loss:.4f} | - |")
    per = cal.groupby(["dataset", "calibrator"])[["rank_brier", "rank_log_loss"]].mean().unstack("calibrator")
    return "\n".join(lines) + "\n\nmean ranks per dataset:\n" + per.round(2).to_string()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=list(DATASETS))
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--out", default=None, help="optional CSV of every row")
    args = ap.parse_args()
    df = run(args.datasets, args.seeds)
    if args.out:
        df.to_csv(args.out, index=False)
    print(summarise(df))


if __name__ == "__main__":
    main()
