"""bayescal: Bayesian calibration of binary classifiers.

Everything is imported lazily (PEP 562), so ``import bayescal`` loads neither PyMC nor
matplotlib nor scikit-learn; they load when first used.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from bayescal._version import __version__

# public name -> module that defines it
_LAZY: dict[str, str] = {
    "calibrators": "bayescal._registry",
    "make_calibrator": "bayescal._registry",
    "load": "bayescal.io",
    "save": "bayescal.io",
    "ScoreData": "bayescal.data",
    "ScoreSummary": "bayescal.data",
    "Calibrator": "bayescal.base",
    "BayesianCalibrator": "bayescal.base",
    "HistogramBinning": "bayescal.baselines.histogram",
    "PlattScaling": "bayescal.baselines.platt",
    "IsotonicCalibrator": "bayescal.baselines.isotonic",
    "KDECalibrator": "bayescal.baselines.kde",
    "BetaCalibration": "bayescal.baselines.beta",
    "ScalingBinning": "bayescal.baselines.scaling_binning",
    "BBQ": "bayescal.baselines.bbq",
    "ENIR": "bayescal.baselines.enir",
    "ELiTE": "bayescal.baselines.elite",
    "MBCT": "bayescal.baselines.mbct",
    "DPMCalibrator": "bayescal.bayesian.dpm",
    "QuadraticScaling": "bayescal.baselines.quadratic",
    "SplineCalibration": "bayescal.baselines.spline",
    "TemperatureScaling": "bayescal.baselines.temperature",
    "VennAbers": "bayescal.baselines.venn_abers",
    "ClassConditional": "bayescal.base",
    "PriorShiftedCalibrator": "bayescal.base",
    "CalibratedClassifier": "bayescal.classifier",
}
_SUBMODULES = {
    "metrics",
    "datasets",
    "data",
    "io",
    "base",
    "baselines",
    "bayesian",
    "decision",
    "diagnostics",
    "plotting",
    "cli",
    "classifier",
    "prior_shift",
}

__all__ = ["__version__", *_LAZY, *sorted(_SUBMODULES)]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    if name in _SUBMODULES:
        return import_module(f"bayescal.{name}")
    raise AttributeError(f"module 'bayescal' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
