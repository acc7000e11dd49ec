"""KDECalibrator on the probability scale against the logit scale, on the authors' quadratic-SVM scores.

Naeini et al. (2014) ship the scores of their quadratic SVM on the simulated disc-and-ring data
(``naeini_quadratic_svm_scores.csv`` in the reference data folder, ``../shared/reference``
beside the checkout). The script fits ``KDECalibrator(scale="probability")`` (the default, as in
the paper) and ``KDECalibrator(scale="logit")`` on the training scores and prints each one's
test ECE (``bayescal.metrics.ece``, the papers' binning), the spread of the positives' training
logits and each class's Silverman bandwidth on the scale of the KDE: the numbers the ``scale``
parameter's docstring quotes.

Usage::

    python benchmarks/kde_scale.py [--reference ../shared/reference] > benchmarks/results/kde_scale.md
"""

from __future__ import annotations

import argparse
import datetime as dt
from pathlib import Path

import numpy as np
import pandas as pd
from make_evidence import REFERENCE, machine
from scipy.special import logit

from bayescal.baselines.kde import KDECalibrator
from bayescal.metrics import ece


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reference", type=Path, default=REFERENCE)
    args = ap.parse_args()
    path = args.reference / "naeini_quadratic_svm_scores.csv"
    if not path.is_file():
        raise SystemExit(f"{path} is absent: pass --reference, the folder of the authors' reference data.")
    q = pd.read_csv(path)
    tr, te = q[q.split == "train"], q[q.split == "test"]
    print("# KDECalibrator: probability scale against logit scale (Naeini et al.'s quadratic-SVM scores)\n")
    stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M")
    print(f"{stamp} UTC ({machine()}): `python benchmarks/kde_scale.py`\n")
    pos = logit(np.clip(tr.score[tr.label == 1].to_numpy(), 1e-12, 1 - 1e-12))
    print(f"positives' training logits: {pos.min():.1f} to {pos.max():.1f}\n")
    print("| scale | test ECE (papers' binning) | bandwidth class 0 | bandwidth class 1 |")
    print("|---|---|---|---|")
    for scale in ("probability", "logit"):
        cal = KDECalibrator(scale=scale).fit(tr.score, tr.label)
        p = cal.predict_proba(te.score)[:, 1]
        h0, h1 = cal.bandwidth_
        print(f"| {scale} | {ece(te.label, p, strategy='papers'):.4f} | {h0:.3g} | {h1:.3g} |")


if __name__ == "__main__":
    main()
