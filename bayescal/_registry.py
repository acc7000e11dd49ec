"""The registry of calibrators: short name -> class, imported lazily.

Tests, benchmarks, the CLI and the demo iterate over this table, so adding a calibrator is
one module plus one line here. Classes are imported on first use, so ``import bayescal``
stays light (the Bayesian ones import PyMC only when a model is built).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bayescal.base import Calibrator

__all__ = ["REGISTRY", "calibrators", "get_calibrator_class", "make_calibrator"]

REGISTRY: dict[str, str] = {
    "histogram": "bayescal.baselines.histogram:HistogramBinning",
    "platt": "bayescal.baselines.platt:PlattScaling",
    "isotonic": "bayescal.baselines.isotonic:IsotonicCalibrator",
    "kde": "bayescal.baselines.kde:KDECalibrator",
    "beta": "bayescal.baselines.beta:BetaCalibration",
    "scaling_binning": "bayescal.baselines.scaling_binning:ScalingBinning",
    "bbq": "bayescal.baselines.bbq:BBQ",
    "enir": "bayescal.baselines.enir:ENIR",
    "elite": "bayescal.baselines.elite:ELiTE",
    "mbct": "bayescal.baselines.mbct:MBCT",
    "dpm": "bayescal.bayesian.dpm:DPMCalibrator",
    "quadratic": "bayescal.baselines.quadratic:QuadraticScaling",
    "spline": "bayescal.baselines.spline:SplineCalibration",
    "temperature": "bayescal.baselines.temperature:TemperatureScaling",
    "venn_abers": "bayescal.baselines.venn_abers:VennAbers",
}


def calibrators() -> list[str]:
    """Names of every available calibrator, sorted.

    Returns
    -------
    list of str
        The registry names, each accepted by :func:`make_calibrator`.

    Examples
    --------
    >>> import bayescal
    >>> "dpm" in bayescal.calibrators()
    True
    """
    return sorted(REGISTRY)


def get_calibrator_class(name: str) -> type:
    """The calibrator class registered under ``name`` (imported on first use).

    Parameters
    ----------
    name : str
        A name from :func:`calibrators`.

    Returns
    -------
    type
        A subclass of :class:`bayescal.base.Calibrator`.

    Raises
    ------
    ValueError
        When ``name`` is not registered; the message lists the names.
    """
    try:
        target = REGISTRY[name]
    except KeyError:
        raise ValueError(f"Unknown calibrator {name!r}: choose one of {calibrators()}.") from None
    module, cls = target.split(":")
    return getattr(import_module(module), cls)


def make_calibrator(name: str, **params: Any) -> Calibrator:
    """Build the calibrator registered under ``name`` with the given parameters.

    The registry maps short names to classes (``"dpm"`` -> :class:`~bayescal.DPMCalibrator`,
    ``"platt"`` -> :class:`~bayescal.PlattScaling`, ...; :func:`calibrators` lists them).
    Tests, benchmarks, the command line and the demo build calibrators through it, so code
    that loops over the registry takes every calibrator, including new ones.

    Parameters
    ----------
    name : str
        A registry name from :func:`calibrators`.
    **params
        Keyword parameters of that class's constructor (see its page in the API
        reference), e.g. ``score_kind="decision"`` or ``random_state=0``.

    Returns
    -------
    Calibrator
        An unfitted calibrator; call ``fit(scores, y)``.

    Raises
    ------
    ValueError
        When ``name`` is not registered (the message lists the names).
    TypeError
        When a parameter is not one of the class's.

    See Also
    --------
    calibrators : the registered names.

    Examples
    --------
    >>> import bayescal
    >>> from bayescal.datasets import simulate_scores
    >>> d = simulate_scores("beta_skewed", 500, random_state=0)
    >>> cal = bayescal.make_calibrator("platt").fit(d.scores, d.y)
    >>> cal.predict_proba(d.scores).shape
    (500, 2)
    """
    return get_calibrator_class(name)(**params)


def registry_name(obj_or_cls: Any) -> str:
    """The registry name of a calibrator instance or class.

    Parameters
    ----------
    obj_or_cls : Calibrator or type
        A calibrator or its class.

    Returns
    -------
    str
        The name it is registered under.
    """
    cls = obj_or_cls if isinstance(obj_or_cls, type) else type(obj_or_cls)
    target = f"{cls.__module__}:{cls.__name__}"
    for name, path in REGISTRY.items():
        if path == target:
            return name
    raise ValueError(f"{cls.__name__} is not a registered calibrator: add it to bayescal._registry.REGISTRY.")
