"""Plots of the Bayesian calibration workflow (matplotlib, imported on first use).

Compute first, draw second (scikit-learn's ``CalibrationDisplay`` pattern): every Display
holds exactly what the compute functions return -- :func:`bayescal.metrics.reliability_curve`,
``Calibrator.calibration_map`` / ``credible_band`` / ``density_map``, the checks of
:mod:`bayescal.diagnostics`, :func:`bayescal.decision.decision_regions` -- and ``plot`` draws
those numbers, so tests can read the drawing back and compare.

* :class:`ReliabilityDisplay`: calibration maps with credible bands, binned observed
  frequencies with their counts and consistency bands, each class's histogram of the x-axis
  underneath (scores, or without maps the probabilities binned); several calibrators in one figure.
* :class:`DensityDisplay`: observed class-conditional score histograms against the posterior
  densities with bands, and the masses of score atoms.
* :class:`PPCDisplay`: replicated distribution of a reliability statistic against its
  observed value, with the p-value.
* :class:`DecisionDisplay`: the cost-optimal decision regions on the calibration map.
* :func:`plot_ppc_pava`: ArviZ's PAV calibration check of replicated labels.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import xarray as xr

from bayescal._typing import ArrayLike, RandomStateLike
from bayescal._validation import (
    DEFAULT_CI_PROB,
    check_bool,
    check_calibrator,
    check_ci_prob,
    check_consistent_length,
    check_pos_label,
    check_probabilities,
    check_scored_labels,
    check_scores,
    resolve_random_state,
)

if TYPE_CHECKING:
    from bayescal.base import Calibrator

__all__ = ["DecisionDisplay", "DensityDisplay", "PPCDisplay", "ReliabilityDisplay", "plot_ppc_pava"]


def _colors() -> list[str]:
    import matplotlib.pyplot as plt

    return plt.rcParams["axes.prop_cycle"].by_key()["color"]


def _n_draws(da: xr.DataArray) -> int:
    return da.sizes["chain"] * da.sizes["draw"]


def _label(calibrator: Calibrator, label: str | None) -> str:
    return label or type(calibrator).__name__


def _random_state(random_state: RandomStateLike, random_seed: RandomStateLike, where: str) -> RandomStateLike:
    """A Display's ``random_state`` (default 0), or the deprecated ``random_seed`` when
    ``random_state`` is left at its default; any other ``random_state`` with ``random_seed`` is
    refused (:func:`~bayescal._validation.resolve_random_state`)."""
    at_default = type(random_state) is int and random_state == 0
    # the warning points at the user's call of the Display factory (this helper is one frame deeper)
    return resolve_random_state(None if random_seed is not None and at_default else random_state, random_seed, where)


@contextmanager
def _closed_on_error() -> Iterator[None]:
    """Close the figures opened inside the block when it raises: a drawing that fails leaves no
    figure of its own open (figures and Axes the caller gave are left alone)."""
    import matplotlib.pyplot as plt

    before = set(plt.get_fignums())
    try:
        yield
    except BaseException:
        for num in sorted(set(plt.get_fignums()) - before):
            plt.close(num)
        raise


def _checked(calibrators: Any, *, raw: bool, where: str | None = None) -> Mapping[str, Any]:
    """``calibrators`` as given, once it is a non-empty mapping of labels to fitted calibrators
    (or ``None``, the raw probabilities, where ``raw``); with ``where``, the Display drawing maps
    of scores alone, a feature-aware calibrator is refused in its name."""
    from sklearn.utils.validation import check_is_fitted

    entries = "fitted calibrators or None (raw probabilities)" if raw else "fitted calibrators"
    if not isinstance(calibrators, Mapping) or not calibrators:
        raise ValueError(
            f"calibrators={calibrators!r} must be a non-empty mapping of labels to {entries}, "
            "e.g. {'dpm': fitted_dpm}; for one calibrator use from_calibrator."
        )
    for est in calibrators.values():
        if est is None and raw:
            continue
        check_is_fitted(check_calibrator(est, scores_only=where))
    return calibrators


def _axes(axes: Any, needed: int, what: str, name: str = "axes") -> Any:
    """``axes`` as a list of at least ``needed`` Axes (one Axes stands for a list of one; an
    array of them, as ``plt.subplots`` returns, is flattened); None stays None (a new figure)."""
    if axes is None:
        return None
    from matplotlib.axes import Axes

    flat = [axes] if isinstance(axes, Axes) else list(np.ravel(np.asarray(axes, dtype=object)))
    if not all(isinstance(a, Axes) for a in flat):
        raise ValueError(
            f"{name}={axes!r:.80} is not a matplotlib Axes or a sequence of them: pass Axes, e.g. plt.subplots()[1]."
        )
    if len(flat) < needed:
        raise ValueError(f"{name} has {len(flat)} Axes but the figure needs {needed}, {what}: pass that many.")
    return flat


def _axes_array(axes: Any) -> np.ndarray:
    """The Axes a display drew on, as a 1-D object array (as ``plt.subplots`` gives them), whether
    the caller passed a list, an array or nothing."""
    out = np.empty(len(axes), dtype=object)
    out[:] = list(axes)
    return out


def _one_axes(ax: Any) -> Any:
    """``ax`` as one Axes (also given as an array holding one, e.g. ``plt.subplots(squeeze=False)``);
    None stays None (a new figure)."""
    axes = _axes(ax, 1, "the diagram", name="ax")
    if axes is None:
        return None
    if len(axes) > 1:
        raise ValueError(f"ax holds {len(axes)} Axes but the diagram is drawn on one: pass one of them, e.g. axs[0].")
    return axes[0]


def _within(atoms: np.ndarray, lo: float, hi: float, score_kind: str) -> np.ndarray:
    """Whether each atom lies in ``[lo, hi]`` on the working scale, where the calibrator puts it (an
    atom at 0 stands for scores below 1e-12 too, so it lies in a range that starts at such a score)."""
    from bayescal.data import to_working

    t, ends = to_working(np.asarray(atoms, dtype=np.float64), score_kind), to_working(np.array([lo, hi]), score_kind)
    return (t >= ends[0]) & (t <= ends[1])


def _fill_map(disp: Any, label: str, calibrator: Calibrator, grid: Any, ci_prob: float) -> None:
    """Set ``disp.maps[label]`` (posterior-mean map) and, with more than one draw,
    ``disp.bands[label]`` over ``grid`` in order of the score. Grid points at the calibrator's
    atoms (compared on the working scale, as calibrators match them) are left out of both: the
    map at a point mass is not the map beside it. The map at the atoms within the grid's range
    goes to ``disp.atom_maps`` / ``disp.atom_bands``."""
    from bayescal.base import atom_scores, band_of, check_ci_kind
    from bayescal.data import at_atoms

    ci_prob, ci_kind = check_ci_prob(ci_prob), check_ci_kind(None)
    cmap = calibrator.calibration_map(grid)  # once: the mean map and its band both read it
    g = cmap["score"].values
    atoms = atom_scores(calibrator)
    kind = calibrator.score_kind
    between = ~at_atoms(g, atoms, kind)
    many = _n_draws(cmap) > 1
    # keep_attrs: the layout reads score_scale, whatever xarray's keep_attrs option
    disp.maps[label] = cmap.mean(("chain", "draw"), keep_attrs=True).isel(score=between).sortby("score")
    if many:
        disp.bands[label] = band_of(cmap, ci_prob, ci_kind).isel(score=between).sortby("score")
    atoms = atoms[_within(atoms, g.min(), g.max(), kind)]
    if atoms.size:
        at = calibrator.calibration_map(atoms)
        disp.atom_maps[label] = at.mean(("chain", "draw"), keep_attrs=True)
        if many:
            disp.atom_bands[label] = band_of(at, ci_prob, ci_kind)


def _draw_atom_maps(disp: Any, ax: Any, label: str, color: str) -> None:
    """The map at the atoms of ``label`` as markers, with the band as a bar, apart from the map line."""
    if label not in disp.atom_maps:
        return
    if label in disp.atom_bands:
        b = disp.atom_bands[label]
        ax.vlines(
            b["score"].values,
            b.sel(ci_bound="lower").values,
            b.sel(ci_bound="upper").values,
            color=color,
            alpha=0.4,
            lw=3,
            gid=f"atom_band:{label}",
        )
    m = disp.atom_maps[label]
    ax.plot(
        m["score"].values,
        m.values,
        "D",
        color=color,
        mfc="white",
        ms=5,
        clip_on=False,  # a map of 0 or 1 at an atom sits on the axes' edge
        label=f"{label} map at point masses",
        gid=f"atom:{label}",
    )


def _percent(prob: float) -> str:
    """A band's probability as a percentage without rounding it away (0.999 -> '99.9%')."""
    return f"{100 * float(prob):.4g}%"


def _labels_of(calibrators: Mapping[str, Any], y: ArrayLike, pos_label: Any) -> np.ndarray:
    """``y`` as 0/1: coded by the fitted calibrators' classes (which must agree with each other
    and with ``pos_label``, when given), or with only raw entries by
    :func:`~bayescal._validation.check_scored_labels`."""
    from bayescal._validation import check_labels_as

    check_pos_label(pos_label)
    fitted = {name: est for name, est in calibrators.items() if est is not None}
    if not fitted:
        return check_scored_labels(y, pos_label=pos_label, name="y", require_both=True)
    first, est = next(iter(fitted.items()))
    classes = est.classes_
    for name, other in fitted.items():
        if len(other.classes_) != len(classes) or np.any(other.classes_ != classes):
            raise ValueError(
                f"calibrators {first!r} and {name!r} were fitted on different classes ({classes.tolist()} and "
                f"{other.classes_.tolist()}, negative first): compare calibrators fitted on the same labels."
            )
    if pos_label is not None and pos_label != classes[1]:
        raise ValueError(
            f"pos_label={pos_label!r} but the calibrators' positive class is {classes.tolist()[1]!r} (their classes_): "
            "leave pos_label out, or refit them with it."
        )
    return check_labels_as(y, classes, name="y")


def _predictions(y_true: ArrayLike, y_prob: ArrayLike, pos_label: Any) -> tuple[np.ndarray, np.ndarray]:
    """A classifier's probabilities and its labels as 0/1 (1 for ``pos_label``; see
    :func:`~bayescal._validation.check_scored_labels`), checked to be of one length."""
    p = check_probabilities(y_prob, name="y_prob")
    check_pos_label(pos_label)
    y01 = check_scored_labels(y_true, pos_label=pos_label, name="y_true", require_both=True)
    check_consistent_length(y_true=y01, y_prob=p)
    return p, y01


def _count_text(n: float) -> str:
    """A bin's count: whole counts in full with thousands separators, others to 4 digits."""
    return f"{n:,.0f}" if float(n).is_integer() else f"{n:.4g}"


def _cutoff_text(cut: float) -> str:
    """The cut-off to 3 significant digits, and to 3 of its distance to 1 where that is below 0.1
    (0.99999 is not shown as 1)."""
    gap = 1.0 - float(cut)
    extra = int(np.floor(-np.log10(gap))) if 0.0 < gap < 0.1 else 0
    return f"{cut:.{3 + extra}g}"


@dataclass
class ReliabilityDisplay:
    """A reliability diagram: calibration maps with bands, binned frequencies, score histograms.

    Attributes
    ----------
    curves : dict[str, xarray.Dataset]
        Per label, the binned reliability curve (``bin`` dimension) of the calibrated
        probabilities on the evaluation data (:func:`bayescal.metrics.reliability_curve`).
    maps : dict[str, xarray.DataArray]
        Per label, the posterior-mean calibration map over a score grid (input scale),
        without the grid points at the calibrator's score atoms.
    bands : dict[str, xarray.DataArray]
        Per label, the credible band ``(score, ci_bound)`` on the same points (point estimates
        have none).
    atom_maps, atom_bands : dict[str, xarray.DataArray]
        Per label of a calibrator with score atoms (point masses, e.g. a DPM's exact 0 and 1;
        :meth:`~bayescal.base.ClassConditional.score_atoms`) within the grid's range: the
        posterior-mean map and its band at those atoms, drawn as markers apart from the map
        line (the map at a point mass is not the map beside it).
    consistency : dict[str, xarray.DataArray]
        Per label, the consistency band ``(bin, ci_bound)`` of the binned frequencies: where
        they would fall if the label's probabilities were calibrated
        (:func:`bayescal.diagnostics.consistency_check`).
    predictions : dict[str, ndarray]
        Per label of ``curves``, the probabilities binned there, one per row of ``scores``: the
        calibrated probabilities of a calibrator, the scores themselves for a ``None`` entry.
        Without maps they are the diagram's x-axis, so the histograms show them.
    scores, y : ndarray
        The evaluation scores (input scale) and 0/1 labels, for the histograms.
    figure_, ax_, hist_ax_ : matplotlib Figure and Axes
        Set by :meth:`plot`: the figure, the diagram's axes and the histograms' axes (None
        when drawn on a given ``ax``).
    """

    curves: dict[str, xr.Dataset] = field(default_factory=dict)
    maps: dict[str, xr.DataArray] = field(default_factory=dict)
    bands: dict[str, xr.DataArray] = field(default_factory=dict)
    consistency: dict[str, xr.DataArray] = field(default_factory=dict)
    atom_maps: dict[str, xr.DataArray] = field(default_factory=dict)
    atom_bands: dict[str, xr.DataArray] = field(default_factory=dict)
    predictions: dict[str, np.ndarray] = field(default_factory=dict)
    scores: np.ndarray | None = None
    y: np.ndarray | None = None
    figure_: Any = None
    ax_: Any = None
    hist_ax_: Any = None

    @classmethod
    def from_calibrators(
        cls,
        calibrators: Mapping[str, Calibrator | None],
        scores: ArrayLike,
        y: ArrayLike,
        *,
        n_bins: int = 10,
        strategy: str = "quantile",
        ci_prob: float | None = DEFAULT_CI_PROB,
        grid: ArrayLike | int | None = None,
        n_consistency: int = 200,
        random_state: RandomStateLike = 0,
        maps: bool = True,
        points: bool = True,
        ax: Any = None,
        random_seed: RandomStateLike = None,
        pos_label: Any = None,
    ) -> ReliabilityDisplay:
        """Compute and draw the diagram for several fitted calibrators on evaluation data.

        Two readings share the axes, so a figure usually shows one of them per panel:
        ``points=False`` draws the calibrators' maps against the raw score (with the raw
        scores' own binned frequencies for a ``None`` entry); ``maps=False`` draws each
        calibrator's binned calibrated probabilities with their consistency bands.

        Parameters
        ----------
        calibrators : mapping of str to Calibrator or None
            Label -> fitted calibrator; ``None`` shows the raw scores (probabilities).
        scores : array-like of shape (n,)
            Evaluation scores, on the input scale of the calibrators.
        y : array-like of shape (n,)
            Binary labels of the evaluation data.
        n_bins : int, default 10
            Number of bins of the observed frequencies (:func:`bayescal.metrics.reliability_curve`).
        strategy : {"quantile", "uniform", "papers"}, default "quantile"
            Binning strategy of the observed frequencies.
        ci_prob : float, default :data:`~bayescal.base.DEFAULT_CI_PROB` (0.95)
            Probability of the credible and consistency bands, in (0, 1); None gives the default.
        grid : array-like or int, optional
            Score grid of the maps (see :meth:`bayescal.base.Calibrator.calibration_map`);
            score atoms are drawn as markers apart from the map line.
        n_consistency : int, default 200
            Label replicates of each consistency band; 0 draws none.
        random_state : None, int or numpy.random.Generator, default 0
            Randomness of the consistency replicates.
        maps, points : bool, default True
            Whether to compute and draw the calibrators' maps (and bands), and the binned
            points of their calibrated probabilities (not both False: that would draw nothing
            of the calibrators). A ``None`` entry always has its points. The histograms under
            the diagram show its x-axis: the scores when maps are drawn, each label's binned
            probabilities (``predictions``) when they are not.
        ax : matplotlib.axes.Axes, optional
            Draw the diagram there (no histograms; also an array holding one Axes); a new
            figure when None.
        random_seed : deprecated
            Old name of ``random_state``; accepted with a ``DeprecationWarning`` for one release
            (with ``random_state`` left at its default).
        pos_label : optional
            The value of ``y`` that is the positive class. By default the fitted calibrators'
            positive class (``classes_[1]``, as in their fit); with only ``None`` entries, as
            in :func:`bayescal.metrics.ece` (needed for text labels).

        Returns
        -------
        ReliabilityDisplay
            The computed numbers and the drawn figure (``figure_``, ``ax_``, ``hist_ax_``).

        Examples
        --------
        >>> import bayescal
        >>> from bayescal.datasets import simulate_scores
        >>> from bayescal.plotting import ReliabilityDisplay
        >>> d = simulate_scores("beta_skewed", 500, random_state=0)
        >>> platt = bayescal.make_calibrator("platt").fit(d.scores, d.y)
        >>> disp = ReliabilityDisplay.from_calibrators({"raw": None, "platt": platt}, d.scores, d.y,
        ...                                            n_consistency=0)
        >>> sorted(disp.curves)
        ['platt', 'raw']
        """
        random_state = _random_state(random_state, random_seed, "ReliabilityDisplay")
        from bayescal.diagnostics import _check_replicates, consistency_check
        from bayescal.metrics import reliability_curve

        ci_prob = check_ci_prob(ci_prob)
        n_consistency = _check_replicates(n_consistency, "n_consistency", 200, minimum=0)
        maps, points = check_bool(maps, "maps"), check_bool(points, "points")
        if not (maps or points):
            raise ValueError(
                "maps=False and points=False would draw nothing of the calibrators: keep maps=True (their maps "
                "against the score) or points=True (their binned calibrated probabilities)."
            )
        ax = _one_axes(ax)
        y01 = _labels_of(_checked(calibrators, raw=True, where="ReliabilityDisplay"), y, pos_label)
        s = check_scores(scores, score_kind="decision")
        check_consistent_length(scores=s, y=y01)
        disp = cls(scores=s, y=y01)
        for label, est in calibrators.items():
            if est is None:
                p = check_probabilities(s, name="scores")
            else:
                p = est.predict_proba(s)[:, 1]
                if maps:  # in order of the score, whatever the order of a given grid
                    _fill_map(disp, label, est, grid, ci_prob)
                if not points:
                    continue
            disp.curves[label] = reliability_curve(y01, p, n_bins=n_bins, strategy=strategy)
            disp.predictions[label] = p
            if n_consistency:
                check = consistency_check(
                    p,
                    y01,
                    statistics="ece",
                    n_bins=n_bins,
                    strategy=strategy,
                    n_replicates=n_consistency,
                    ci_prob=ci_prob,
                    random_state=random_state,
                )
                disp.consistency[label] = check["band"]
        disp.plot(ax=ax)
        return disp

    @classmethod
    def from_calibrator(
        cls,
        calibrator: Calibrator,
        scores: ArrayLike,
        y: ArrayLike,
        *,
        label: str | None = None,
        n_bins: int = 10,
        strategy: str = "quantile",
        ci_prob: float | None = DEFAULT_CI_PROB,
        grid: ArrayLike | int | None = None,
        n_consistency: int = 200,
        random_state: RandomStateLike = 0,
        maps: bool = True,
        points: bool = True,
        ax: Any = None,
        random_seed: RandomStateLike = None,
        pos_label: Any = None,
    ) -> ReliabilityDisplay:
        """The diagram of one fitted calibrator.

        Parameters
        ----------
        calibrator : Calibrator
            A fitted calibrator.
        scores, y : array-like of shape (n,)
            Evaluation scores (input scale) and binary labels.
        label : str, optional
            Its label in the legend; the class name when None.
        n_bins, strategy, ci_prob, grid, n_consistency, random_state, maps, points, ax, random_seed, pos_label
            As in :meth:`from_calibrators`.

        Returns
        -------
        ReliabilityDisplay
        """
        random_state = _random_state(random_state, random_seed, "ReliabilityDisplay")
        return cls.from_calibrators(
            {_label(calibrator, label): calibrator},
            scores,
            y,
            n_bins=n_bins,
            strategy=strategy,
            ci_prob=ci_prob,
            grid=grid,
            n_consistency=n_consistency,
            random_state=random_state,
            maps=maps,
            points=points,
            ax=ax,
            pos_label=pos_label,
        )

    @classmethod
    def from_predictions(
        cls,
        y_true: ArrayLike,
        y_prob: ArrayLike,
        *,
        label: str = "classifier",
        n_bins: int = 10,
        strategy: str = "quantile",
        ci_prob: float | None = DEFAULT_CI_PROB,
        n_consistency: int = 200,
        random_state: RandomStateLike = 0,
        ax: Any = None,
        random_seed: RandomStateLike = None,
        pos_label: Any = None,
    ) -> ReliabilityDisplay:
        """The diagram of a classifier's probabilities as they are: was it calibrated already?

        Parameters
        ----------
        y_true : array-like of shape (n,)
            Binary labels.
        y_prob : array-like of shape (n,)
            Predicted probabilities of the positive class, in [0, 1].
        label : str, default "classifier"
            Its label in the legend.
        n_bins, strategy, ci_prob, n_consistency, random_state, ax, random_seed, pos_label
            As in :meth:`from_calibrators`.

        Returns
        -------
        ReliabilityDisplay
        """
        random_state = _random_state(random_state, random_seed, "ReliabilityDisplay")
        p, y01 = _predictions(y_true, y_prob, pos_label)
        return cls.from_calibrators(
            {label: None},
            p,
            y01,
            n_bins=n_bins,
            strategy=strategy,
            ci_prob=ci_prob,
            n_consistency=n_consistency,
            random_state=random_state,
            ax=ax,
        )

    def plot(self, ax: Any = None) -> ReliabilityDisplay:
        """Draw on ``ax`` (a new figure when ``None``): maps, bands, binned points, histograms.

        Maps are drawn against the score they calibrate, the map at score atoms as markers
        (with their band as a bar); each binned point sits at the mean *predicted*
        probability of its bin (the raw score for ``None``, the calibrated one otherwise),
        annotated with its count, with the consistency band as a vertical bar.

        The histograms under a new figure's diagram show each class's values of the diagram's
        x-axis, on that axis: the scores when maps are drawn, otherwise the probabilities binned
        (``predictions``: one histogram per class of one label, a step histogram per class and
        label for several). A display without maps or ``predictions`` (built by hand) has the
        scores' histograms on an x-axis of their own, over their range.

        Parameters
        ----------
        ax : matplotlib.axes.Axes, optional
            Where to draw (no histograms; also an array holding one Axes); a new figure with
            a histogram panel when None.

        Returns
        -------
        ReliabilityDisplay
            ``self``, with ``figure_``, ``ax_`` and ``hist_ax_`` set.
        """
        ax = _one_axes(ax)
        with _closed_on_error():
            return self._draw(ax)

    def _histograms(self) -> tuple[dict[str, np.ndarray], bool]:
        """What the histograms show, per source (a label, or ``"score"``), and whether that is the
        diagram's x-axis (shared with it) or the scores on an axis of their own."""
        if self.y is None or (self.scores is None and not self.predictions):
            return {}, True
        if self.maps or not self.curves:  # the diagram's x-axis is the score
            return ({"score": self.scores} if self.scores is not None else {}), True
        if all(label in self.predictions for label in self.curves):  # the probabilities binned
            return {label: np.asarray(self.predictions[label]) for label in self.curves}, True
        return ({"score": self.scores} if self.scores is not None else {}), False

    def _draw(self, ax: Any) -> ReliabilityDisplay:
        import matplotlib.pyplot as plt

        # maps of decision values run over the scores' range; the binned points (probabilities) then
        # get their own [0, 1] axis on top, with the diagonal they are read against
        decision = any(m.attrs.get("score_scale") == "decision" for m in self.maps.values())
        # the histograms show the diagram's x-axis, or else the scores on an axis of their own
        hists, shared = self._histograms()
        apart = not shared
        if ax is None:
            fig, (ax, hax) = plt.subplots(2, 1, figsize=(6, 7), sharex=not apart, gridspec_kw={"height_ratios": [3, 1]})
        else:
            fig, hax = ax.figure, None
        pax = ax.twiny() if decision and self.curves else ax
        drawn = any(line.get_gid() == "diagonal" for line in pax.get_lines())  # an axis drawn on before has it
        if (self.curves or not decision) and not drawn:  # the diagonal belongs to the binned points' axis
            pax.plot([0, 1], [0, 1], ls=":", color="grey", lw=1, label="perfect calibration", gid="diagonal")
        colors = _colors()
        labels = list(dict.fromkeys([*self.curves, *self.maps]))
        for i, label in enumerate(labels):
            c = colors[i % len(colors)]
            if label in self.maps:
                m = self.maps[label]
                ax.plot(m["score"].values, m.values, color=c, lw=1.8, label=f"{label} map", gid=f"map:{label}")
            if label in self.bands:
                b = self.bands[label]
                ax.fill_between(
                    b["score"].values,
                    b.sel(ci_bound="lower").values,
                    b.sel(ci_bound="upper").values,
                    color=c,
                    alpha=0.25,
                    lw=0,
                    label=f"{label} {_percent(b.attrs['ci_prob'])} band",
                    gid=f"band:{label}",
                )
            _draw_atom_maps(self, ax, label, c)
            if label not in self.curves:
                continue
            curve = self.curves[label]
            x, f = curve["mean_predicted"].values, curve["fraction_positive"].values
            if label in self.consistency:
                cb = self.consistency[label]
                pax.vlines(
                    x,
                    cb.sel(ci_bound="lower").values,
                    cb.sel(ci_bound="upper").values,
                    color=c,
                    alpha=0.5,
                    lw=3,
                    gid=f"consistency:{label}",
                )
            pax.plot(x, f, "o", color=c, ms=4, label=f"{label} binned", gid=f"binned:{label}")
            for xi, fi, n in zip(x, f, curve["count"].values):
                pax.annotate(
                    _count_text(n),
                    (xi, fi),
                    textcoords="offset points",
                    xytext=(3, -9),
                    fontsize=6,
                    color=c,
                    gid=f"count:{label}",
                )
        lo, hi = 0.0, 1.0
        if decision:
            ends = [v for m in self.maps.values() for v in (m["score"].values.min(), m["score"].values.max())]
            if self.scores is not None:
                ends += [self.scores.min(), self.scores.max()]
            lo, hi = float(min(ends)), float(max(ends))
        ax.set_xlim(lo, hi)
        ax.set_ylim(0, 1)
        ax.set_ylabel("P(y = 1 | score)" if self.maps else "observed fraction positive")
        mixed = any(lbl in self.maps for lbl in self.curves)  # a calibrator with both readings
        if pax is not ax:
            pax.set_xlim(0, 1)
            pax.set_xlabel("mean predicted probability (binned points)")
            ax.set_xlabel("decision value (maps)")
        else:
            ax.set_xlabel(
                "score (maps); mean predicted probability (binned points)"
                if mixed
                else "score"
                if self.maps
                else "mean predicted probability"
            )
        handles = [h for a in dict.fromkeys([ax, pax]) for h in a.get_legend_handles_labels()[0]]
        ax.legend(handles=handles, fontsize=7, loc="upper left")
        if hax is not None and hists:
            if apart:  # the scores over their own range
                lo, hi = float(np.min(hists["score"])), float(np.max(hists["score"]))
                hax.set_xlim(lo, hi)
            bins = np.linspace(lo, hi, 41)
            for source, values in hists.items():
                v = np.clip(values, lo, hi)
                for k in (0, 1):
                    rows = v[self.y == k]
                    if len(hists) == 1:
                        hax.hist(rows, bins=bins, alpha=0.6, label=f"class {k}", gid=f"hist:{source}:{k}")
                    else:  # several labels' probabilities: step histograms in each label's colour
                        hax.hist(
                            rows,
                            bins=bins,
                            histtype="step",
                            color=colors[labels.index(source) % len(colors)],
                            ls="--" if k == 0 else "-",
                            label=f"{source}, class {k}",
                            gid=f"hist:{source}:{k}",
                        )
            hax.set_xlabel("score" if "score" in hists else "predicted probability")
            hax.set_ylabel("count")
            hax.legend(fontsize=8)
        self.figure_, self.ax_, self.hist_ax_ = fig, ax, hax
        return self


@dataclass
class DensityDisplay:
    """Class-conditional score densities: observed histograms against posterior densities.

    Attributes
    ----------
    checks : dict[str, xarray.Dataset]
        Per label, :func:`bayescal.diagnostics.score_density_check` (histograms, bin-averaged
        posterior densities, p-values).
    densities : dict[str, xarray.DataArray]
        Per label, the posterior-mean ``density_map`` over ``(class, score)``: the continuous
        part of each class's score distribution.
    bands : dict[str, xarray.DataArray]
        Per label, its pointwise band ``(class, score, ci_bound)``.
    atoms : dict[str, xarray.DataArray]
        Per label of a calibrator with score atoms within the histograms' range, the
        posterior-mean mass of each class's scores at each atom, ``(class, atom)``
        (:meth:`~bayescal.base.ClassConditional.score_atoms`): the rest of each class's
        distribution, which the check's bin probabilities include.
    figure_, axes_ : matplotlib Figure and numpy array of Axes
        Set by :meth:`plot`: the figure and its two panels (a 1-D object array, also when the
        panels were passed as a list).
    """

    checks: dict[str, xr.Dataset] = field(default_factory=dict)
    densities: dict[str, xr.DataArray] = field(default_factory=dict)
    bands: dict[str, xr.DataArray] = field(default_factory=dict)
    atoms: dict[str, xr.DataArray] = field(default_factory=dict)
    figure_: Any = None
    axes_: Any = None

    @classmethod
    def from_calibrators(
        cls,
        calibrators: Mapping[str, Any],
        scores: ArrayLike,
        y: ArrayLike,
        *,
        bins: int | ArrayLike = 20,
        grid: int | ArrayLike = 301,
        ci_prob: float | None = DEFAULT_CI_PROB,
        random_state: RandomStateLike = 0,
        axes: Any = None,
        random_seed: RandomStateLike = None,
    ) -> DensityDisplay:
        """Compute and draw for :class:`~bayescal.base.ClassConditional` calibrators (e.g. ``"dpm"``).

        Parameters
        ----------
        calibrators : mapping of str to Calibrator
            Label -> fitted calibrator that models the class score densities.
        scores, y : array-like of shape (n,)
            Evaluation scores (input scale) and binary labels.
        bins : int or array-like, default 20
            Bins of the observed histograms (:func:`bayescal.diagnostics.score_density_check`).
        grid : int or array-like, default 301
            Points of the density curves: a number (at least 2, at most
            :data:`~bayescal.base.MAX_GRID_SIZE`) spread over the histograms' range, or an
            array of scores (input scale), as the other Displays' ``grid``.
        ci_prob : float, default :data:`~bayescal.base.DEFAULT_CI_PROB` (0.95)
            Probability of the density bands, in (0, 1); None gives the default.
        random_state : None, int or numpy.random.Generator, default 0
            Randomness of the replicated counts of the check.
        axes : sequence of two matplotlib.axes.Axes, optional
            One per class; a new figure when None.
        random_seed : deprecated
            Old name of ``random_state``; accepted with a ``DeprecationWarning`` for one release
            (with ``random_state`` left at its default).

        Returns
        -------
        DensityDisplay
        """
        random_state = _random_state(random_state, random_seed, "DensityDisplay")
        import arviz_stats

        from bayescal.base import ClassConditional, check_grid_size
        from bayescal.diagnostics import score_density_check

        ci_prob = check_ci_prob(ci_prob)
        axes = _axes(axes, 2, "one per class")
        size = check_grid_size(grid, minimum=2) if np.ndim(grid) == 0 else 0
        for label, est in _checked(calibrators, raw=False).items():
            if not isinstance(est, ClassConditional):
                raise ValueError(
                    f"calibrators[{label!r}] is a {type(est).__name__}, which does not model the class score "
                    "densities DensityDisplay draws: pass calibrators that do, e.g. 'dpm' or 'kde'."
                )
        y01 = _labels_of(calibrators, y, None)
        s = check_scores(scores, score_kind="decision")
        check_consistent_length(scores=s, y=y01)
        disp = cls()
        for label, est in calibrators.items():
            check = score_density_check(est, s, y, bins=bins, ci_prob=ci_prob, random_state=random_state)
            disp.checks[label] = check
            lo, hi = check["bin_lower"].values[0], check["bin_upper"].values[-1]
            dens = est.density_map(np.linspace(lo, hi, size) if size else grid).sortby("score")
            disp.densities[label] = dens.mean(("chain", "draw"))
            if _n_draws(dens) > 1:
                disp.bands[label] = arviz_stats.eti(dens, prob=ci_prob, dim=["chain", "draw"]).transpose(
                    "class", "score", "ci_bound"
                )
            masses = est.score_atoms()
            inside = _within(masses["atom"].values, lo, hi, est.score_kind)
            if inside.any():
                disp.atoms[label] = masses.isel(atom=inside).mean(("chain", "draw")).transpose("class", "atom")
        disp.plot(axes=axes)
        return disp

    @classmethod
    def from_calibrator(
        cls,
        calibrator: Calibrator,
        scores: ArrayLike,
        y: ArrayLike,
        *,
        label: str | None = None,
        bins: int | ArrayLike = 20,
        grid: int | ArrayLike = 301,
        ci_prob: float | None = DEFAULT_CI_PROB,
        random_state: RandomStateLike = 0,
        axes: Any = None,
        random_seed: RandomStateLike = None,
    ) -> DensityDisplay:
        """The densities of one fitted calibrator.

        Parameters
        ----------
        calibrator : Calibrator
            A fitted calibrator that models the class score densities.
        scores, y : array-like of shape (n,)
            Evaluation scores (input scale) and binary labels.
        label : str, optional
            Its label in the legend; the class name when None.
        bins, grid, ci_prob, random_state, axes, random_seed
            As in :meth:`from_calibrators`.

        Returns
        -------
        DensityDisplay
        """
        random_state = _random_state(random_state, random_seed, "DensityDisplay")
        return cls.from_calibrators(
            {_label(calibrator, label): calibrator},
            scores,
            y,
            bins=bins,
            grid=grid,
            ci_prob=ci_prob,
            random_state=random_state,
            axes=axes,
        )

    def plot(self, axes: Any = None) -> DensityDisplay:
        """One panel per class: observed density histogram (stairs), posterior mean and band.

        The curves are the continuous part of each class's distribution; a score atom is drawn
        as a stem at its score, of height its posterior-mean mass divided by the width of the
        histogram bin holding it (its share of that bin's density, on the histogram's scale),
        annotated with the mass itself.

        Parameters
        ----------
        axes : sequence of two matplotlib.axes.Axes, optional
            One per class; a new figure when None.

        Returns
        -------
        DensityDisplay
            ``self``, with ``figure_`` and ``axes_`` set.
        """
        axes = _axes(axes, 2, "one per class")
        with _closed_on_error():
            return self._draw(axes)

    def _draw(self, axes: Any) -> DensityDisplay:
        import matplotlib.pyplot as plt

        if axes is None:
            fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=False)
        fig = axes[0].figure
        colors = _colors()
        for k, cls_ in enumerate((0, 1)):
            ax = axes[k]
            for i, (label, check) in enumerate(self.checks.items()):
                c = colors[i % len(colors)]
                edges = np.concatenate([check["bin_lower"].values, check["bin_upper"].values[-1:]])
                if i == 0:
                    ax.stairs(
                        check["observed_density"].sel({"class": cls_}).values,
                        edges,
                        color="grey",
                        lw=1.2,
                        label="observed",
                        gid="observed",
                    )
                d = self.densities[label].sel({"class": cls_})
                ax.plot(
                    d["score"].values,
                    d.values,
                    color=c,
                    lw=1.6,
                    label=f"{label} (p = {float(check['p_value'].sel({'class': cls_})):.2f})",
                    gid=f"density:{label}",
                )
                if label in self.bands:
                    b = self.bands[label].sel({"class": cls_})
                    ax.fill_between(
                        b["score"].values,
                        b.sel(ci_bound="lower").values,
                        b.sel(ci_bound="upper").values,
                        color=c,
                        alpha=0.25,
                        lw=0,
                        gid=f"band:{label}",
                    )
                if label in self.atoms:
                    mass = self.atoms[label].sel({"class": cls_})
                    where = mass["atom"].values
                    which = np.clip(np.searchsorted(edges, where, side="right") - 1, 0, edges.size - 2)
                    height = mass.values / np.diff(edges)[which]
                    ax.vlines(
                        where,
                        0.0,
                        height,
                        color=c,
                        lw=2.5,
                        label=f"{label} point masses (mass / bin width)",
                        gid=f"atom:{label}",
                    )
                    for a, h, m in zip(where, height, mass.values):
                        ax.annotate(
                            f"{m:.2g}",
                            (a, h),
                            textcoords="offset points",
                            xytext=(3, 2),
                            fontsize=7,
                            color=c,
                            gid=f"atom_mass:{label}",
                        )
            if not ax.get_title():  # a title of the caller's stays
                ax.set_title(f"class {cls_}")
            ax.set_xlabel("score")
            ax.legend(fontsize=7)
        axes[0].set_ylabel("density")
        self.figure_, self.axes_ = fig, _axes_array(axes[:2])
        return self


@dataclass
class PPCDisplay:
    """Posterior predictive check of a reliability statistic: replicated histogram vs observed.

    Attributes
    ----------
    checks : dict[str, xarray.Dataset]
        Per label, :func:`bayescal.diagnostics.ppc_calibration` (calibrators) or
        :func:`bayescal.diagnostics.consistency_check` (raw probabilities).
    figure_, axes_ : matplotlib Figure and numpy array of Axes
        Set by :meth:`plot`: the figure and one panel per statistic (a 1-D object array, also
        when the panels were passed as a list).
    """

    checks: dict[str, xr.Dataset] = field(default_factory=dict)
    figure_: Any = None
    axes_: Any = None

    @classmethod
    def from_calibrators(
        cls,
        calibrators: Mapping[str, Calibrator | None],
        scores: ArrayLike,
        y: ArrayLike,
        *,
        statistics: str | Sequence[str] = ("ece", "mcb"),
        n_bins: int = 10,
        random_state: RandomStateLike = 0,
        axes: Any = None,
        random_seed: RandomStateLike = None,
        pos_label: Any = None,
    ) -> PPCDisplay:
        """Labels replicated from each calibrator's posterior maps (``None``: the identity map).

        Parameters
        ----------
        calibrators : mapping of str to Calibrator or None
            Label -> fitted calibrator (:func:`bayescal.diagnostics.ppc_calibration`); ``None``
            checks the raw probabilities (:func:`bayescal.diagnostics.consistency_check`).
        scores, y : array-like of shape (n,)
            Evaluation scores (input scale) and binary labels.
        statistics : str or sequence of str, default ("ece", "mcb")
            Reliability statistics of :data:`bayescal.diagnostics.STATISTICS`, one panel each
            (each named once).
        n_bins : int, default 10
            Bins of the ECE.
        random_state : None, int or numpy.random.Generator, default 0
            Randomness of the replicated labels.
        axes : matplotlib.axes.Axes or sequence of them, optional
            One per statistic (one Axes for one statistic); a new figure when None.
        random_seed : deprecated
            Old name of ``random_state``; accepted with a ``DeprecationWarning`` for one release
            (with ``random_state`` left at its default).
        pos_label : optional
            The value of ``y`` that is the positive class, as in
            :meth:`ReliabilityDisplay.from_calibrators` (needed for text labels with only
            ``None`` entries).

        Returns
        -------
        PPCDisplay
        """
        random_state = _random_state(random_state, random_seed, "PPCDisplay")
        from bayescal.diagnostics import _check_statistics, consistency_check, ppc_calibration

        names = _check_statistics(statistics)
        axes = _axes(axes, len(names), "one per statistic")
        y01 = _labels_of(_checked(calibrators, raw=True, where="PPCDisplay"), y, pos_label)
        s = check_scores(scores, score_kind="decision")
        check_consistent_length(scores=s, y=y01)
        disp = cls()
        for label, est in calibrators.items():
            if est is None:
                disp.checks[label] = consistency_check(
                    s, y01, statistics=names, n_bins=n_bins, band=False, random_state=random_state
                )
            else:
                disp.checks[label] = ppc_calibration(
                    est, s, y, statistics=names, n_bins=n_bins, random_state=random_state
                )
        disp.plot(axes=axes)
        return disp

    @classmethod
    def from_calibrator(
        cls,
        calibrator: Calibrator,
        scores: ArrayLike,
        y: ArrayLike,
        *,
        label: str | None = None,
        statistics: str | Sequence[str] = ("ece", "mcb"),
        n_bins: int = 10,
        random_state: RandomStateLike = 0,
        axes: Any = None,
        random_seed: RandomStateLike = None,
    ) -> PPCDisplay:
        """The check of one fitted calibrator.

        Parameters
        ----------
        calibrator : Calibrator
            A fitted calibrator.
        scores, y : array-like of shape (n,)
            Evaluation scores (input scale) and binary labels.
        label : str, optional
            Its label in the legend; the class name when None.
        statistics, n_bins, random_state, axes, random_seed
            As in :meth:`from_calibrators`.

        Returns
        -------
        PPCDisplay
        """
        random_state = _random_state(random_state, random_seed, "PPCDisplay")
        return cls.from_calibrators(
            {_label(calibrator, label): calibrator},
            scores,
            y,
            statistics=statistics,
            n_bins=n_bins,
            random_state=random_state,
            axes=axes,
        )

    @classmethod
    def from_predictions(
        cls,
        y_true: ArrayLike,
        y_prob: ArrayLike,
        *,
        label: str = "classifier",
        statistics: str | Sequence[str] = ("ece", "mcb"),
        n_bins: int = 10,
        random_state: RandomStateLike = 0,
        axes: Any = None,
        random_seed: RandomStateLike = None,
        pos_label: Any = None,
    ) -> PPCDisplay:
        """The consistency check of a classifier's probabilities as they are.

        Parameters
        ----------
        y_true : array-like of shape (n,)
            Binary labels.
        y_prob : array-like of shape (n,)
            Predicted probabilities of the positive class, in [0, 1].
        label : str, default "classifier"
            Its label in the legend.
        statistics, n_bins, random_state, axes, random_seed, pos_label
            As in :meth:`from_calibrators`.

        Returns
        -------
        PPCDisplay
        """
        random_state = _random_state(random_state, random_seed, "PPCDisplay")
        p, y01 = _predictions(y_true, y_prob, pos_label)
        return cls.from_calibrators(
            {label: None}, p, y01, statistics=statistics, n_bins=n_bins, random_state=random_state, axes=axes
        )

    def plot(self, axes: Any = None) -> PPCDisplay:
        """One panel per statistic: histogram of replicated values, a vertical line at the
        observed value (its posterior mean when it varies with the draw), p-value in the legend.

        The panels are the first check's statistics, which every check must have (checked before
        any figure is opened).

        Parameters
        ----------
        axes : matplotlib.axes.Axes or sequence of them, optional
            One per statistic (one Axes for one statistic); a new figure when None.

        Returns
        -------
        PPCDisplay
            ``self``, with ``figure_`` and ``axes_`` set.
        """
        if not self.checks:
            raise ValueError(
                "This PPCDisplay has no checks to draw: build it with PPCDisplay.from_calibrators, "
                "from_calibrator or from_predictions."
            )
        (first, check), *_ = self.checks.items()
        names = [str(name) for name in check["statistic"].values]
        for label, check in self.checks.items():
            have = set(check["statistic"].values.tolist()) if "statistic" in check.coords else set()
            missing = [name for name in names if name not in have]
            if missing:
                raise ValueError(
                    f"checks[{label!r}] has no statistic {', '.join(map(repr, missing))}, which checks[{first!r}] "
                    f"has: every check is drawn in one panel per statistic, so compute them all with the same "
                    f"statistics={names!r}."
                )
        axes = _axes(axes, len(names), "one per statistic")
        with _closed_on_error():
            return self._draw(axes, names)

    def _draw(self, axes: Any, names: list[str]) -> PPCDisplay:
        import matplotlib.pyplot as plt

        if axes is None:
            fig, axes = plt.subplots(1, len(names), figsize=(4.5 * len(names), 3.5), squeeze=False)
            axes = axes[0]
        fig = axes[0].figure
        colors = _colors()
        for k, name in enumerate(names):
            ax = axes[k]
            for i, (label, check) in enumerate(self.checks.items()):
                c = colors[i % len(colors)]
                rep = check["replicated"].sel(statistic=name).values.ravel()
                obs = float(check["observed"].sel(statistic=name).mean())
                pval = float(check["p_value"].sel(statistic=name))
                ax.hist(rep, bins=30, color=c, alpha=0.4, density=True, gid=f"replicated:{label}")
                ax.axvline(obs, color=c, lw=2, label=f"{label}: p = {pval:.3f}", gid=f"observed:{label}")
            ax.set_xlabel(f"{name} (replicated vs observed)")
            ax.legend(fontsize=7)
        self.figure_, self.axes_ = fig, _axes_array(axes[: len(names)])
        return self


@dataclass
class DecisionDisplay:
    """Cost-optimal decision regions on the calibration map (Cohen & Goldszmidt 2004).

    Attributes
    ----------
    regions : dict[str, DecisionRegions]
        Per label, :func:`bayescal.decision.decision_regions`.
    maps, bands : dict[str, xarray.DataArray]
        Per label, the posterior-mean map and its credible band on the same grid, without
        the grid points at the calibrator's score atoms.
    atom_maps, atom_bands : dict[str, xarray.DataArray]
        Per label of a calibrator with score atoms within the grid's range, the map and its
        band at those atoms (as in :class:`ReliabilityDisplay`); each atom is decided alone
        (``DecisionRegions.atom_rule``).
    figure_, ax_ : matplotlib Figure and Axes
        Set by :meth:`plot`.
    """

    regions: dict[str, Any] = field(default_factory=dict)
    maps: dict[str, xr.DataArray] = field(default_factory=dict)
    bands: dict[str, xr.DataArray] = field(default_factory=dict)
    atom_maps: dict[str, xr.DataArray] = field(default_factory=dict)
    atom_bands: dict[str, xr.DataArray] = field(default_factory=dict)
    figure_: Any = None
    ax_: Any = None

    @classmethod
    def from_calibrators(
        cls,
        calibrators: Mapping[str, Calibrator],
        *,
        cost_fp: float = 1.0,
        cost_fn: float = 1.0,
        grid: ArrayLike | int = 401,
        ci_prob: float | None = DEFAULT_CI_PROB,
        ax: Any = None,
    ) -> DecisionDisplay:
        """Compute the regions of each calibrator and draw them under its map.

        Parameters
        ----------
        calibrators : mapping of str to Calibrator
            Label -> fitted calibrator.
        cost_fp, cost_fn : float, default 1.0
            Costs of a false positive and a false negative
            (:func:`bayescal.decision.decision_regions`).
        grid : array-like or int, default 401
            Score grid of the maps and regions.
        ci_prob : float, default :data:`~bayescal.base.DEFAULT_CI_PROB` (0.95)
            Probability of the credible bands, in (0, 1); None gives the default.
        ax : matplotlib.axes.Axes, optional
            Draw there (also an array holding one Axes); a new figure when None.

        Returns
        -------
        DecisionDisplay
        """
        from bayescal.decision import decision_regions

        ci_prob = check_ci_prob(ci_prob)
        ax = _one_axes(ax)
        disp = cls()
        for label, est in _checked(calibrators, raw=False, where="DecisionDisplay").items():
            disp.regions[label] = decision_regions(est, cost_fp, cost_fn, grid=grid)
            _fill_map(disp, label, est, grid, ci_prob)  # in order of the score, as the regions are
        disp.plot(ax=ax)
        return disp

    @classmethod
    def from_calibrator(
        cls,
        calibrator: Calibrator,
        *,
        label: str | None = None,
        cost_fp: float = 1.0,
        cost_fn: float = 1.0,
        grid: ArrayLike | int = 401,
        ci_prob: float | None = DEFAULT_CI_PROB,
        ax: Any = None,
    ) -> DecisionDisplay:
        """The decision regions of one fitted calibrator.

        Parameters
        ----------
        calibrator : Calibrator
            A fitted calibrator.
        label : str, optional
            Its label in the legend; the class name when None.
        cost_fp, cost_fn, grid, ci_prob, ax
            As in :meth:`from_calibrators`.

        Returns
        -------
        DecisionDisplay
        """
        return cls.from_calibrators(
            {_label(calibrator, label): calibrator}, cost_fp=cost_fp, cost_fn=cost_fn, grid=grid, ci_prob=ci_prob, ax=ax
        )

    def plot(self, ax: Any = None) -> DecisionDisplay:
        """Map, band, the cut-off c* as a horizontal line, the 'predict 1' intervals as shaded
        spans along the bottom (one strip per calibrator), thresholds as dashed lines.

        The map at score atoms is drawn as markers (with their band as a bar), and an atom
        whose own decision is 'predict 1' as a bar across its calibrator's strip.

        Parameters
        ----------
        ax : matplotlib.axes.Axes, optional
            Where to draw (also an array holding one Axes); a new figure when None.

        Returns
        -------
        DecisionDisplay
            ``self``, with ``figure_`` and ``ax_`` set.
        """
        if not self.regions:
            raise ValueError(
                "This DecisionDisplay has no regions to draw: build it with DecisionDisplay.from_calibrators "
                "or from_calibrator."
            )
        ax = _one_axes(ax)
        with _closed_on_error():
            return self._draw(ax)

    def _draw(self, ax: Any) -> DecisionDisplay:
        import matplotlib.pyplot as plt

        if ax is None:
            fig, ax = plt.subplots(figsize=(6.5, 4.5))
        fig = ax.figure
        colors = _colors()
        n = len(self.regions)
        for i, (label, reg) in enumerate(self.regions.items()):
            c = colors[i % len(colors)]
            m = self.maps[label]
            ax.plot(m["score"].values, m.values, color=c, lw=1.8, label=f"{label} map", gid=f"map:{label}")
            if label in self.bands:
                b = self.bands[label]
                ax.fill_between(
                    b["score"].values,
                    b.sel(ci_bound="lower").values,
                    b.sel(ci_bound="upper").values,
                    color=c,
                    alpha=0.2,
                    lw=0,
                    gid=f"band:{label}",
                )
            _draw_atom_maps(self, ax, label, c)
            strip = {"ymin": i / (10 * n), "ymax": (i + 1) / (10 * n), "color": c, "alpha": 0.6}
            for lo, hi in reg.intervals:
                ax.axvspan(lo, hi, **strip, gid=f"predict1:{label}")
            shown = self.atom_maps[label]["score"].values if label in self.atom_maps else np.empty(0)
            for atom, rule in zip(reg.atoms, reg.atom_rule):
                if rule == 1 and np.isin(atom, shown):
                    ax.axvline(atom, **strip, lw=4, gid=f"predict1_atom:{label}")
            for t in reg.thresholds:
                ax.axvline(t, color=c, ls="--", lw=1, gid=f"threshold:{label}")
        cut = next(iter(self.regions.values())).cutoff
        ax.axhline(cut, color="black", ls=":", lw=1, label=f"c* = {_cutoff_text(cut)}", gid="cutoff")
        ax.set_ylim(0, 1)
        ax.set_xlabel("score")
        ax.set_ylabel("P(y = 1 | score)")
        if not ax.get_title():  # a title of the caller's stays
            ax.set_title("Decision regions (strips: predict 1)")
        ax.legend(fontsize=7)
        self.figure_, self.ax_ = fig, ax
        return self


def plot_ppc_pava(
    calibrator: Calibrator,
    scores: ArrayLike,
    y: ArrayLike,
    *,
    ci_prob: float | None = None,
    random_state: RandomStateLike = 0,
    random_seed: RandomStateLike = None,
    **plot_kwargs: Any,
) -> Any:
    """ArviZ's PAV-adjusted calibration check of labels replicated from the calibrator.

    Builds :func:`bayescal.diagnostics.posterior_predictive_tree` and passes it to
    ``arviz_plots.plot_ppc_pava`` (Dimitriadis et al. 2021; Saeilynoja et al. 2026): the
    CORP reliability curve of the observed labels against the posterior-mean predictions,
    with the band of the replicated labels.

    Parameters
    ----------
    calibrator : Calibrator
        A fitted calibrator.
    scores, y : array-like of shape (n,)
        Evaluation scores (input scale) and binary labels.
    ci_prob : float, optional
        Probability of the band; :data:`~bayescal.base.DEFAULT_CI_PROB` (0.95) when None.
    random_state : None, int or numpy.random.Generator, default 0
        Randomness of the replicated labels; the default 0, as the Displays', draws the same
        band on every call (None draws a new one each time).
    random_seed : deprecated
        Old name of ``random_state``; accepted with a ``DeprecationWarning`` for one release
        (with ``random_state`` left at its default).
    **plot_kwargs
        Passed to ``arviz_plots.plot_ppc_pava`` (``backend`` defaults to ``"matplotlib"``). If
        ArviZ refuses them, the figure it had opened is closed.

    Returns
    -------
    arviz_plots.PlotCollection
    """
    import arviz_plots

    from bayescal.diagnostics import posterior_predictive_tree

    random_state = _random_state(random_state, random_seed, "plot_ppc_pava")
    ci_prob = check_ci_prob(ci_prob)
    check_calibrator(calibrator, scores_only="plot_ppc_pava")
    tree = posterior_predictive_tree(calibrator, scores, y, random_state=random_state)
    plot_kwargs.setdefault("backend", "matplotlib")
    with _closed_on_error():
        return arviz_plots.plot_ppc_pava(tree, var_names="y", ci_prob=ci_prob, **plot_kwargs)
