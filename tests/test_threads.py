"""Thread safety of prediction (issue "Reliability", part 5), for every registered calibrator.

A fitted calibrator is shared by a pool of threads, each calling ``predict_proba`` (and, for
calibrators with a 1-D map, ``calibration_map`` and ``credible_band``; for Bayesian ones
``predict_posterior``) on its own block of scores many times over;
every concurrent answer must equal the serial answer exactly, and the calibrator must be
unchanged afterwards.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from _calibrators import build, simulated

import bayescal

NAMES = bayescal.calibrators()
N_THREADS = 8
N_BLOCKS = 16
ROUNDS = 4


@pytest.mark.parametrize("name", NAMES)
def test_concurrent_predictions_equal_serial_ones(name):
    s, y, X = simulated(400, 11)
    rng = np.random.default_rng(12)
    est = build(name)
    feat = est.feature_aware
    est.fit(s, y, **({"X": X} if feat else {}))
    # blocks of different sizes, including the ends of the scale and repeated values
    blocks = [np.r_[0.0, 1.0, rng.random(50 + 37 * i), s[:i]] for i in range(N_BLOCKS)]
    feats = [rng.integers(0, 3, size=(b.size, 2)) for b in blocks]

    def predict(i):
        return est.predict_proba(blocks[i], **({"X": feats[i]} if feat else {}))

    def cmap(i):
        return est.calibration_map(blocks[i]).values

    def band(i):
        return est.credible_band(blocks[i], ci_prob=0.9).values

    def posterior(i):
        return est.predict_posterior(blocks[i]).values

    calls = [predict] if feat else [predict, cmap, band]
    if isinstance(est, bayescal.BayesianCalibrator):
        calls.append(posterior)
    serial = {(f.__name__, i): f(i) for f in calls for i in range(N_BLOCKS)}
    jobs = [(f, i) for _ in range(ROUNDS) for f in calls for i in range(N_BLOCKS)]
    rng.shuffle(jobs)
    with ThreadPoolExecutor(max_workers=N_THREADS) as pool:
        results = list(pool.map(lambda job: (job[0].__name__, job[1], job[0](job[1])), jobs))
    assert len(results) == len(jobs)
    for fname, i, value in results:
        np.testing.assert_array_equal(value, serial[(fname, i)], err_msg=f"{fname} block {i}")
    for i in range(N_BLOCKS):  # and the calibrator still predicts as before
        np.testing.assert_array_equal(predict(i), serial[("predict", i)])
