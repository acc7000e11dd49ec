"""Real-data comparison of the DPM calibrator with beta calibration, isotonic regression and others.

Issue "Bayesian core", check 4: on real binary datasets that install offline from the
package registry, with scores from several kinds of base classifier, the default DPM
calibrator's average rank on Brier score and on log loss must be at least as good as
:class:`~bayescal.baselines.beta.BetaCalibration`'s and
:class:`~bayescal.baselines.isotonic.IsotonicCalibrator`'s.

**Datasets** (all read from files inside installed wheels; nothing is downloaded at run
time -- ``--check-offline`` re-runs the loaders in a network namespace with no network):

==============  ========================  =====  =========  ===============================================
name            package                   rows   positive   binary target (1 =)
==============  ========================  =====  =========  ===============================================
breast_cancer   scikit-learn (bundled)    569    62.7 %     benign tumour (Wisconsin diagnostic data)
Default         ISLP 0.6 ``data/*.csv``   10000  3.3 %      the card holder defaulted
Caravan         ISLP                      5822   6.0 %      bought caravan insurance (85 socio-economic
                                                            features)
OJ              ISLP                      1070   39.0 %     bought Minute Maid rather than Citrus Hill
College         ISLP                      777    72.7 %     the US college is private
Weekly          ISLP                      1089   55.6 %     S&P 500 went up that week, from the five
                                                            lagged returns and volume (``Today``, which
                                                            defines the label, and ``Year`` are dropped)
Wage            ISLP                      3000   69.4 %     the worker has health insurance (``logwage``
                                                            and ``wage`` kept as features)
==============  ========================  =====  =========  ===============================================

ISLP is the data package of "An Introduction to Statistical Learning"; install it with
``pip install --no-deps ISLP`` (its CSV files are read with pandas, the package itself,
with its heavy dependencies, is never imported). Categorical columns are one-hot encoded
(first level dropped). No dataset is binarised from a multi-class target.

**Base classifiers** (scikit-learn): logistic regression and a linear SVM (``LinearSVC``,
C = 0.1), both on standardised features; Gaussian naive Bayes (its probabilities pile up at
exact 0 and 1: the DPM's atoms); histogram gradient boosting; a random forest (200 trees;
its scores are vote shares that take few distinct values, again with atoms at 0 and 1).
The SVM's score is the logistic of its decision value, as in Naeini et al. (2014), so every
calibrator sees a probability; on the DPM's working scale (the logit) this is exactly the
decision value.

**Protocol.** Each (dataset, split seed) is split 50 / 25 / 25 into train / calibration /
test, stratified. Each classifier fits on train; each calibrator fits on the calibration
scores with its default settings (``random_state`` = split seed for the DPM, whose default
inference is the blocked Gibbs sampler) and predicts the test scores. Metrics on test
(:mod:`bayescal.metrics`): Brier score, log loss (probabilities clipped at machine epsilon,
as scikit-learn does; a calibrator that outputs exact 0 or 1, like isotonic regression or
histogram binning, pays about 36 nats per confident mistake) and class-1 ECE with 10
equal-count bins. In each (dataset, classifier, seed) cell the calibrators are ranked
(1 = best, ties share the mean rank, values compared after rounding to 10 decimals; a
calibrator whose fit failed takes the worst rank and the failure is listed). Ranks are
computed twice: among the three calibrators of the check (DPM, beta, isotonic) and among
all twelve calibrators (adding Platt scaling, histogram binning, the KDE calibrator, BBQ,
ENIR, quadratic and spline scaling, temperature scaling and Venn-Abers for context).

Outputs: the per-(dataset, classifier) table of mean Brier and log loss, the average ranks,
the DPM's mean ranks per dataset and per classifier, failures and warnings, printed and
saved as JSON in ``benchmarks/results/dpm_realdata.json`` (kept in git: ``make_evidence.py``
rebuilds the real-data page from it).

**Measured** (2026-11-25, DPM defaults then, among them the concentration learnt under a
Gamma(1, 1) prior (``priors={"alpha_shape": 1.0, "alpha_rate": 1.0}`` since 2026-12-02; the
current default's ranks are on ``docs/evidence/realdata.md``): ``components="select"`` (Gaussian and Beta
components compared on the chains' first 100 draws by the leave-one-out log densities of the
points, the kept family's chains run on), the null model averaged in by pseudo-BMA+ weights,
tie spreading, the neighbour rule for atoms, compression above 2,048 scores on asinh-scale
bins, Gibbs draws thinned by ``gibbs.default_thin``; 3 splits, 105 cells, 75 s on the 2-core
machine with every calibrator; no fit failed; command ``python benchmarks/dpm_realdata.py``):

============  ==========  =============  ======  ========  =====
calibrator    rank Brier  rank log loss  Brier   log loss  ECE
============  ==========  =============  ======  ========  =====
dpm           1.65        1.62           0.1060  0.3311    0.037
beta          1.88        1.76           0.1062  0.3348    0.035
isotonic      2.49        2.62           0.1078  0.4884    0.032
uncalibrated  -           -              0.1399  0.8702    0.102
============  ==========  =============  ======  ========  =====

(ranks among the three checked calibrators, metrics averaged over the cells). So the DPM
ranks ahead of both on both scores; paired over cells it beats beta calibration in 57
(Brier) and 58 (log loss) of 105, a tie (Wilcoxon p = 0.33, 0.11), and isotonic regression
in 83 and 87 (p = 3e-10, 1e-14); among all twelve calibrators it ranks first on both
(4.40 / 4.33, quadratic scaling next with 4.65 / 4.63). The last digit of these ranks is
Monte Carlo noise of the sampler on the compressed datasets: with the Gibbs sweeps before
2026-11-25's allocation change (the same posterior, other random numbers) and the family
comparison on 1,000 drawn points the ranks were 1.66 / 1.63, with the new sweeps 1.66 / 1.65,
and with ``--dpm-param random_state=1000`` (``--calibrators dpm beta isotonic``)
they are 1.65 / 1.59 (1.65 / 1.60 with the former sweeps). With Gaussian components alone
(``--dpm-param 'components="gaussian"'``, the default before; 2026-11-24, ``--calibrators dpm
beta isotonic``) it was 1.63 / 1.62 (beta 1.88 / 1.75; Brier 0.1059, log loss 0.3309); with
the families compared on all their draws (both fitted in full) 1.65 / 1.63. With
``components="auto"`` (Gaussian and Beta components averaged by their label scores;
``--dpm-param 'components="auto"'``) it is 1.76 / 1.70 (beta 1.80 / 1.70; DPM Brier 0.1062,
log loss 0.3319; 147 s): averaging in the Beta family,
which on simulated truths makes the band cover where scores pile near 0 and 1, costs a
little on these datasets (Brier rank for boosting 1.76 -> 2.05, logistic 1.67 -> 1.81,
random forest 1.57 -> 1.71, linear SVM 1.67 -> 1.76; naive Bayes 1.48 -> 1.48).
With Gaussian components: compression above 5,000 scores (the default before), which changes
only the ``Default`` cells (2,500 calibration rows), gave 1.66 / 1.64 (beta 1.87 / 1.74);
stacking weights for the null model instead of pseudo-BMA+ 1.72 / 1.65 (beta 1.85 / 1.73).
How it got there:

* before null stacking the DPM ranked 1.88 / 1.77 (beta 1.81 / 1.65): on ``Weekly`` (no
  signal: test AUC about 0.52) two separately fitted densities made a map that wandered
  around the constant; averaging with the constant map fixed that (1.82 / 1.76 with stacking
  weights);
* the rest of the gap was tied scores: random-forest vote shares and, less, boosted and
  discrete-feature scores. Every value repeating in 1 % of a class was an atom with its
  own Beta posterior (a Laplace-smoothed frequency of a handful of rows: Wage / random
  forest had 30 of them), and a tied value just under the threshold got a spike of the
  mixture (Default / random forest: map 0.6-0.8 at scores 0.02-0.03, where positives are
  about 5 %). Spreading ties over their rounding cells and keeping as atoms only values
  that stand out from their neighbours took the random-forest log-loss rank from 1.90 to
  1.52 (beta's went from 1.52 to 1.86), Default / random forest from log loss 0.128 to
  0.102 (beta 0.105) and Wage / random forest from 0.584 to 0.557 (beta 0.555). Still
  behind beta there: breast_cancer / random forest (142 calibration rows; 0.153 against
  0.134), where the uniform prior on the mass of the exact-0 atom keeps the map there near
  0.04-0.1 with no positive at 0.

Usage::

    python benchmarks/dpm_realdata.py               # 3 split seeds, all calibrators
    python benchmarks/dpm_realdata.py --quick       # 1 seed, DPM / beta / isotonic only
    python benchmarks/dpm_realdata.py --seeds 5 --datasets Default OJ --classifiers naive_bayes
    python benchmarks/dpm_realdata.py --check-offline
    python benchmarks/dpm_realdata.py --quick --dpm-param null_stacking=false   # DPM sensitivity

References
----------
Naeini, M. P., Cooper, G. F. & Hauskrecht, M. (2014). Binary classifier calibration: a
Bayesian non-parametric approach. arXiv:1401.3390.
James, G., Witten, D., Hastie, T., Tibshirani, R. & Taylor, J. (2023). An Introduction to
Statistical Learning with Applications in Python. Springer (the ISLP data).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.special import expit
from scipy.stats import rankdata

CHECKED = ("dpm", "beta", "isotonic")
CONTEXT = ("platt", "histogram", "kde", "bbq", "enir", "quadratic", "spline", "temperature", "venn_abers")
METRICS = ("brier", "log_loss", "ece")
RANKED = ("brier", "log_loss")
RESULTS = Path(__file__).resolve().parent / "results" / "dpm_realdata.json"

# name -> (source package, ISLP file or None, target column, positive level, columns dropped)
DATASETS: dict[str, tuple[str, str | None, str | None, str | None, tuple[str, ...]]] = {
    "breast_cancer": ("scikit-learn", None, None, None, ()),
    "Default": ("ISLP", "Default", "default", "Yes", ()),
    "Caravan": ("ISLP", "Caravan", "Purchase", "Yes", ()),
    "OJ": ("ISLP", "OJ", "Purchase", "MM", ()),
    "College": ("ISLP", "College", "Private", "Yes", ()),
    "Weekly": ("ISLP", "Weekly", "Direction", "Up", ("Today", "Year")),
    "Wage": ("ISLP", "Wage", "health_ins", "1. Yes", ()),
}
CLASSIFIERS = ("logistic", "linear_svm", "naive_bayes", "boosting", "random_forest")


def _islp_csv(name: str) -> pd.DataFrame:
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        path = distribution("ISLP").locate_file(f"ISLP/data/{name}.csv")
    except PackageNotFoundError:
        raise SystemExit("the ISLP data package is missing: pip install --no-deps ISLP") from None
    return pd.read_csv(path)


def load(name: str) -> tuple[np.ndarray, np.ndarray]:
    """Features (numeric; categories one-hot with the first level dropped) and 0/1 labels."""
    _, file, target, positive, dropped = DATASETS[name]
    if file is None:
        from sklearn.datasets import load_breast_cancer

        data = load_breast_cancer()
        return data.data, data.target.astype(int)
    df = _islp_csv(file)
    y = (df.pop(target) == positive).to_numpy().astype(int)
    X = pd.get_dummies(df.drop(columns=list(dropped)), drop_first=True, dtype=float).to_numpy(dtype=float)
    return X, y


def make_classifiers(names, seed: int) -> dict:
    from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.naive_bayes import GaussianNB
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import LinearSVC

    every = {
        "logistic": lambda: make_pipeline(StandardScaler(), LogisticRegression(max_iter=5000)),
        "linear_svm": lambda: make_pipeline(StandardScaler(), LinearSVC(C=0.1, max_iter=20000, random_state=seed)),
        "naive_bayes": GaussianNB,
        "boosting": lambda: HistGradientBoostingClassifier(random_state=seed),
        "random_forest": lambda: RandomForestClassifier(n_estimators=200, n_jobs=1, random_state=seed),
    }
    return {name: every[name]() for name in names}


def classifier_scores(model, X: np.ndarray) -> np.ndarray:
    """P(y=1) of a probabilistic classifier, or the logistic of an SVM's decision value."""
    if hasattr(model, "predict_proba"):
        return model.predict_proba(X)[:, 1]
    return expit(model.decision_function(X))


def _evaluate(y: np.ndarray, p: np.ndarray) -> dict[str, float]:
    from bayescal import metrics

    return {
        "brier": metrics.brier_score(y, p),
        "log_loss": metrics.log_loss(y, p),
        "ece": metrics.ece(y, p, n_bins=10, strategy="quantile"),
    }


def _calibrate(name: str, seed: int, s_cal, y_cal, s_te, y_te, dpm_params: dict) -> dict:
    """Fit one calibrator, score the test set; a failure is recorded, not raised. For the DPM,
    ``dpm_params`` are calibrator parameters or study options (:func:`dpm_coverage.study_options`),
    and the row names the component families its map is made of (``family``,
    :func:`dpm_coverage.map_families`)."""
    from dpm_coverage import map_families, study_options

    from bayescal import make_calibrator

    # every calibrator with randomness (the DPM's sampler, the spline's folds, ...) is seeded
    seeded = "random_state" in make_calibrator(name).get_params()
    params = ({"random_state": seed} if seeded else {}) | (dpm_params if name == "dpm" else {})
    family = {}
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught, study_options(params) as params:
        warnings.simplefilter("always")
        try:
            model = make_calibrator(name, **params).fit(s_cal, y_cal)
            p = model.predict_proba(s_te)[:, 1]
            if name == "dpm":
                family = {"family": map_families(model)}
        except Exception as exc:
            return {
                "calibrator": name,
                "time_s": time.perf_counter() - t0,
                **dict.fromkeys(METRICS, np.nan),
                "error": f"{type(exc).__name__}: {exc}",
                "warnings": [],
            }
    seconds = time.perf_counter() - t0
    notes = sorted({f"{w.category.__name__}: {str(w.message)[:200]}" for w in caught})
    return {"calibrator": name, "time_s": seconds, **_evaluate(y_te, p), "error": None, "warnings": notes} | family


def run(datasets, classifier_names, calibrator_names, seeds: int, dpm_params: dict) -> pd.DataFrame:
    from sklearn.model_selection import train_test_split

    rows = []
    for name in datasets:
        X, y = load(name)
        for seed in range(seeds):
            X_tr, X_rest, y_tr, y_rest = train_test_split(X, y, test_size=0.5, stratify=y, random_state=seed)
            X_cal, X_te, y_cal, y_te = train_test_split(
                X_rest, y_rest, test_size=0.5, stratify=y_rest, random_state=seed
            )
            for clf_name, clf in make_classifiers(classifier_names, seed).items():
                clf.fit(X_tr, y_tr)
                s_cal, s_te = classifier_scores(clf, X_cal), classifier_scores(clf, X_te)
                cell = {"dataset": name, "classifier": clf_name, "seed": seed}
                rows.append(
                    cell
                    | {
                        "calibrator": "uncalibrated",
                        "time_s": 0.0,
                        **_evaluate(y_te, s_te),
                        "error": None,
                        "warnings": [],
                    }
                )
                for cal_name in calibrator_names:
                    rows.append(cell | _calibrate(cal_name, seed, s_cal, y_cal, s_te, y_te, dpm_params))
                line = " ".join(
                    f"{r['calibrator']} {r['brier']:.4f}/{r['log_loss']:.3f}" for r in rows[-len(calibrator_names) :]
                )
                print(f"{name} {clf_name} seed {seed} (Brier/log loss): {line}", flush=True)
    return pd.DataFrame(rows)


def add_ranks(df: pd.DataFrame, among: tuple[str, ...], suffix: str) -> pd.DataFrame:
    """Rank ``among`` within each (dataset, classifier, seed) cell; failed fits rank last."""
    out = df.copy()
    sel = out["calibrator"].isin(among)
    for metric in RANKED:
        values = out.loc[sel, metric].fillna(np.inf).round(10)
        out.loc[sel, f"rank_{metric}_{suffix}"] = values.groupby(
            [out.loc[sel, "dataset"], out.loc[sel, "classifier"], out.loc[sel, "seed"]]
        ).transform(lambda v: rankdata(v.to_numpy()))
    return out


def _paired(cal: pd.DataFrame, others: list[str]) -> list[dict]:
    """Per metric and other calibrator: cells where DPM is better, median difference, Wilcoxon p-value."""
    from scipy.stats import wilcoxon

    out = []
    for metric in RANKED:
        wide = cal.pivot_table(index=["dataset", "classifier", "seed"], columns="calibrator", values=metric)
        for other in others:
            diff = (wide["dpm"] - wide[other]).dropna()
            out.append(
                {
                    "metric": metric,
                    "other": other,
                    "cells": int(diff.size),
                    "dpm_better": int((diff < 0).sum()),
                    "median_diff": float(diff.median()),
                    "p_value": float(wilcoxon(diff).pvalue),
                }
            )
    return out


def _rank_standard_errors(cal: pd.DataFrame) -> pd.DataFrame:
    """Standard error of each calibrator's average rank among the checked ones, per metric.

    The three splits of one (dataset, classifier) share the data and the classifier, so they
    are not independent: their ranks are averaged first and the standard error is the standard
    deviation of those pair means over the square root of the number of pairs.
    """
    cols = [f"rank_{m}_checked" for m in RANKED]
    pair_means = cal.groupby(["calibrator", "dataset", "classifier"])[cols].mean()
    grouped = pair_means.groupby(level="calibrator")
    return grouped.std(ddof=1) / np.sqrt(grouped.size().to_numpy()[:, None])


def summarise(df: pd.DataFrame, calibrator_names: tuple[str, ...]) -> tuple[str, dict]:
    checked = tuple(c for c in CHECKED if c in calibrator_names)
    df = add_ranks(df, checked, "checked")
    df = add_ranks(df, calibrator_names, "all")
    cal = df[df["calibrator"].isin(calibrator_names)]
    order = ["uncalibrated", *calibrator_names]
    n_cells = cal.groupby(["dataset", "classifier", "seed"]).ngroups
    lines = [
        (
            f"{n_cells} cells ({df['dataset'].nunique()} datasets x {df['classifier'].nunique()} classifiers x "
            f"{df['seed'].nunique()} splits)"
        ),
        "",
    ]
    rank_cols = [f"rank_{m}_checked" for m in RANKED] + [f"rank_{m}_all" for m in RANKED]
    avg = cal.groupby("calibrator")[[*rank_cols, *METRICS, "time_s"]].mean().reindex(list(calibrator_names))
    med_time = cal.groupby("calibrator")["time_s"].median()
    lines += [
        (
            "| calibrator | rank Brier (3) | rank log loss (3) | rank Brier (all) | rank log loss (all) | "
            "mean Brier | mean log loss | mean ECE | median time s |"
        ),
        "|" + "---|" * 9,
    ]
    for cname, r in avg.iterrows():
        three = f"{r.rank_brier_checked:.2f} | {r.rank_log_loss_checked:.2f}" if cname in checked else "- | -"
        lines.append(
            f"| {cname} | {three} | {r.rank_brier_all:.2f} | {r.rank_log_loss_all:.2f} | {r.brier:.4f} | "
            f"{r.log_loss:.4f} | {r.ece:.4f} | {med_time[cname]:.2f} |"
        )
    unc = df[df["calibrator"] == "uncalibrated"][list(METRICS)].mean()
    lines.append(f"| uncalibrated | - | - | - | - | {unc.brier:.4f} | {unc.log_loss:.4f} | {unc.ece:.4f} | - |")
    if checked:
        se = _rank_standard_errors(cal[cal["calibrator"].isin(checked)])
        lines += [
            "",
            "standard error of the average rank among "
            + ", ".join(checked)
            + " (Brier / log loss; the splits of a dataset x classifier averaged first, so the "
            + f"{cal.groupby(['dataset', 'classifier']).ngroups} pairs are the independent units): "
            + ", ".join(
                f"{c} {se.loc[c, 'rank_brier_checked']:.2f} / {se.loc[c, 'rank_log_loss_checked']:.2f}" for c in checked
            ),
        ]

    tables = {}
    for metric in RANKED:
        tab = df.groupby(["dataset", "classifier", "calibrator"])[metric].mean().unstack("calibrator")[order]
        tables[metric] = tab
        lines += ["", f"mean test {metric} over splits (dataset x classifier):", tab.round(4).to_string()]

    verdict = {}
    if "dpm" in checked:
        for metric in RANKED:
            for kind in ("checked", "all"):
                col = f"rank_{metric}_{kind}"
                verdict[f"{metric}_{kind}"] = bool(
                    all(avg.loc["dpm", col] <= avg.loc[c, col] + 1e-12 for c in checked if c != "dpm")
                )
        for by in ("dataset", "classifier"):
            per = (
                cal[cal["calibrator"].isin(checked)]
                .groupby([by, "calibrator"])[[f"rank_{m}_checked" for m in RANKED]]
                .mean()
                .unstack("calibrator")
            )
            lines += ["", f"mean rank among {', '.join(checked)} per {by}:", per.round(2).to_string()]
        lines += [
            "",
            "DPM's average rank at least as good as every other checked calibrator's: "
            + ", ".join(f"{k}: {'yes' if v else 'NO'}" for k, v in verdict.items()),
            "",
            "paired over cells (DPM minus other; Wilcoxon signed-rank test of the differences):",
        ]
        paired = _paired(cal, [c for c in checked if c != "dpm"])
        lines += [
            f"  {r['metric']} vs {r['other']}: DPM better in {r['dpm_better']} of {r['cells']} cells, "
            f"median difference {r['median_diff']:+.5f}, p = {r['p_value']:.3g}"
            for r in paired
        ]
        report_paired = paired
    else:
        report_paired = []

    failures = cal[cal["error"].notna()][["dataset", "classifier", "seed", "calibrator", "error"]]
    lines += ["", f"failed fits: {len(failures)}"] + [" ".join(map(str, r)) for r in failures.itertuples(index=False)]
    warned = cal.explode("warnings").dropna(subset=["warnings"])
    if len(warned):
        kind = warned["warnings"].str.replace(r"[-+]?\d[\d.e+-]*", "#", regex=True).str.slice(0, 90)
        lines += ["", "warnings (calibrator, message with numbers as #: cells):"]
        for (cname, msg), grp in warned.groupby([warned["calibrator"], kind]):
            cells = ", ".join(sorted({f"{r.dataset}/{r.classifier}/{r.seed}" for r in grp.itertuples()}))
            lines.append(f"  {cname}: {msg}...: {cells}")

    report = {
        "cells": n_cells,
        "average": avg.reset_index().to_dict(orient="records"),
        "verdict_dpm_at_least_as_good": verdict,
        "paired": report_paired,
        "tables": {m: t.reset_index().to_dict(orient="records") for m, t in tables.items()},
        "failures": failures.to_dict(orient="records"),
        "rows": df.drop(columns=[c for c in df.columns if c.startswith("rank_")]).to_dict(orient="records"),
    }
    return "\n".join(lines), report


def _git_state() -> str:
    """The commit the package was run from, and whether ``bayescal/`` had uncommitted changes."""
    root = Path(__file__).resolve().parent.parent
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True
    ).stdout.strip()
    dirty = subprocess.run(["git", "diff", "--quiet", "HEAD", "--", "bayescal"], cwd=root, check=False).returncode != 0
    return head + (" with uncommitted changes in bayescal/" if dirty else "")


def check_offline(datasets) -> None:
    """Load every dataset in a child process that has no network (``unshare -rn``)."""
    code = (
        f"import sys; sys.path.insert(0, {str(Path(__file__).resolve().parent)!r}); import dpm_realdata as d; "
        f"[print(n, *[a.shape for a in d.load(n)], round(float(d.load(n)[1].mean()), 3)) for n in {list(datasets)!r}]"
    )
    proc = subprocess.run(["unshare", "-rn", sys.executable, "-c", code], capture_output=True, text=True, check=False)
    print(proc.stdout + proc.stderr)
    if proc.returncode:
        raise SystemExit(f"loading without network failed (exit {proc.returncode})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=list(DATASETS))
    ap.add_argument("--classifiers", nargs="+", default=list(CLASSIFIERS), choices=list(CLASSIFIERS))
    ap.add_argument("--calibrators", nargs="+", default=[*CHECKED, *CONTEXT], choices=[*CHECKED, *CONTEXT])
    ap.add_argument("--seeds", type=int, default=3, help="number of train/calibration/test splits")
    ap.add_argument("--quick", action="store_true", help="1 split, only DPM, beta and isotonic")
    ap.add_argument("--out", type=Path, default=RESULTS, help="JSON output (default: %(default)s)")
    ap.add_argument(
        "--dpm-param",
        action="append",
        default=[],
        metavar="NAME=JSON",
        help="non-default DPMCalibrator parameter for a sensitivity run, e.g. atom_threshold=0.001",
    )
    ap.add_argument("--check-offline", action="store_true", help="only check the datasets load with no network")
    args = ap.parse_args()
    if args.check_offline:
        check_offline(args.datasets)
        return
    if args.quick:
        args.seeds, args.calibrators = 1, list(CHECKED)
    calibrator_names = tuple(args.calibrators)
    t0 = time.perf_counter()
    dpm_params = {k: json.loads(v) for k, v in (item.split("=", 1) for item in args.dpm_param)}
    df = run(args.datasets, args.classifiers, calibrator_names, args.seeds, dpm_params)
    text, report = summarise(df, calibrator_names)
    report["config"] = {
        "datasets": args.datasets,
        "classifiers": args.classifiers,
        "calibrators": list(calibrator_names),
        "seeds": args.seeds,
        "dpm_params": dpm_params,
        "git": _git_state(),
        "wall_s": time.perf_counter() - t0,
    }
    print(text)
    print(f"\nwall time {report['config']['wall_s']:.0f} s")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1, default=float))
    print(f"saved {args.out}")


if __name__ == "__main__":
    main()
