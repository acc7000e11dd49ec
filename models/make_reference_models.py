"""Write the reference saved calibrators of ``models/`` (one per registered calibrator).

Each calibrator is fitted with fixed seeds on fixed simulated data and saved as
``models/<name>.nc``; beside it ``models/<name>.expected.json`` stores the query scores
(and features, for feature-aware calibrators) and the predicted P(y=1) at them, written
with full float precision. ``tests/test_persistence.py`` loads every file and checks the
predictions to 1e-12, so later versions of bayescal must keep reading these files.

Run from the repository root::

    .venv/bin/python models/make_reference_models.py

Regenerate only when the file format or a calibrator's fitted state changes on purpose
(and say so in the commit): the point of these files is that old ones keep loading.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

import bayescal
from bayescal._registry import get_calibrator_class

HERE = Path(__file__).resolve().parent
# small settings so that each file stays small (the DPM keeps 2 x 50 posterior draws)
PARAMS: dict[str, dict] = {"dpm": {"draws": 50, "tune": 500, "n_components": 5, "grid_size": 128}}
SEED = 20261122


def reference_data(n: int = 300):
    """Scores from Beta(2,5) (negatives) and Beta(5,2) (positives), pi = 0.4, with exact 0 and 1
    among them, and two categorical features."""
    rng = np.random.default_rng(SEED)
    y = (rng.random(n) < 0.4).astype(int)
    s = np.where(y == 1, rng.beta(5, 2, n), rng.beta(2, 5, n))
    s[:3], y[:3] = [0.0, 1.0, 0.5], [0, 1, 0]
    X = rng.integers(0, 3, size=(n, 2))
    return s, y, X


def query_scores() -> np.ndarray:
    """Both ends, points next to them, a grid, and a few irregular values."""
    rng = np.random.default_rng(SEED + 1)
    return np.r_[0.0, 1e-9, np.linspace(0.0, 1.0, 21)[1:-1], rng.random(8), 1 - 1e-9, 1.0]


def build(name: str):
    cls = get_calibrator_class(name)
    accepted = cls().get_params()
    seeded = {k: 0 for k in ("random_state", "random_seed") if k in accepted}
    return cls(**seeded, **PARAMS.get(name, {}))


def main() -> None:
    s, y, X = reference_data()
    q = query_scores()
    Xq = np.random.default_rng(SEED + 2).integers(0, 3, size=(q.size, 2))
    for name in bayescal.calibrators():
        est = build(name)
        kw, qkw = ({"X": X}, {"X": Xq}) if est.feature_aware else ({}, {})
        est.fit(s, y, **kw)
        path = HERE / f"{name}.nc"
        est.save(path, overwrite=True)  # regenerating replaces the files on purpose
        # predictions of the reloaded file, which is what later versions must reproduce
        p1 = bayescal.load(path).predict_proba(q, **qkw)[:, 1]
        expected = {"calibrator": name, "bayescal_version": bayescal.__version__,
                    "scores": q.tolist(), "X": Xq.tolist() if est.feature_aware else None, "p1": p1.tolist()}
        (HERE / f"{name}.expected.json").write_text(json.dumps(expected, indent=1) + "\n")
        print(f"{name:<16} {path.stat().st_size:>8} bytes")


if __name__ == "__main__":
    main()
