"""Plots of the Bayesian calibration workflow (matplotlib, imported on first use).

Compute first, draw second (scikit-learn's ``CalibrationDisplay`` pattern): every Display
holds exactly what the compute functions return -- :func:`bayescal.metrics.reliability_curve`,
``Calibrator.calibration_map`` / ``credible_band`` / ``density_map``, the checks of
:mod:`bayescal.diagnostics`, :func:`bayescal.decision.decision_regions` -- and ``plot`` draws
those numbers, so tests can read the drawing back and compare.

* :class:`ReliabilityDisplay`: calibration maps with credible bands, binned observed
  frequencies with their counts and consistency bands, each class's scores underneath;
  several calibrators in one figure.
* :class:`DensityDisplay`: observed class-conditional score histograms against the posterior
  densities with bands.
* :class:`PPCDisplay`: replicated distribution of a reliability statistic against its
  observed value, with the p-value.
* :class:`DecisionDisplay`: the cost-optimal decision regions on the calibration map.
* :func:`plot_ppc_pava`: ArviZ's PAV calibration check of replicated labels.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import xarray as xr

__all__ = ["DecisionDisplay", "DensityDisplay", "PPCDisplay", "ReliabilityDisplay", "plot_ppc_pava"]


def _colors() -> list[str]:
    import matplotlib.pyplot as plt

    return plt.rcParams["axes.prop_cycle"].by_key()["color"]


def _n_draws(da: xr.DataArray) -> int:
    return da.sizes["chain"] * da.sizes["draw"]


class _Display:
    """``from_calibrator``: one calibrator, labelled by its class name unless ``label`` is given."""

    @classmethod
    def from_calibrator(cls, calibrator: Any, *args: Any, label: str | None = None, **kwargs: Any) -> Any:
        """One calibrator (the other arguments as in ``from_calibrators``)."""
        return cls.from_calibrators({label or type(calibrator).__name__: calibrator}, *args, **kwargs)


class _PredictionsDisplay(_Display):
    """Displays that also judge raw predicted probabilities (a ``None`` calibrator)."""

    @classmethod
    def from_predictions(cls, y_true: Any, y_prob: Any, *, label: str = "classifier", **kwargs: Any) -> Any:
        """Probabilities of a classifier as they are: was it calibrated already?"""
        return cls.from_calibrators({label: None}, y_prob, y_true, **kwargs)


@dataclass
class ReliabilityDisplay(_PredictionsDisplay):
    """A reliability diagram: calibration maps with bands, binned frequencies, score histograms.

    Attributes
    ----------
    curves : dict[str, xarray.Dataset]
        Per label, the binned reliability curve (``bin`` dimension) of the calibrated
        probabilities on the evaluation data (:func:`bayescal.metrics.reliability_curve`).
    maps : dict[str, xarray.DataArray]
        Per label, the posterior-mean calibration map over a score grid (input scale).
    bands : dict[str, xarray.DataArray]
        Per label, the credible band ``(score, ci_bound)`` (point estimates have none).
    consistency : dict[str, xarray.DataArray]
        Per label, the consistency band ``(bin, ci_bound)`` of the binned frequencies: where
        they would fall if the label's probabilities were calibrated
        (:func:`bayescal.diagnostics.consistency_check`).
    scores, y : ndarray
        The evaluation scores (input scale) and 0/1 labels, for the histograms.
    """

    curves: dict[str, xr.Dataset] = field(default_factory=dict)
    maps: dict[str, xr.DataArray] = field(default_factory=dict)
    bands: dict[str, xr.DataArray] = field(default_factory=dict)
    consistency: dict[str, xr.DataArray] = field(default_factory=dict)
    scores: np.ndarray | None = None
    y: np.ndarray | None = None
    figure_: Any = None
    ax_: Any = None
    hist_ax_: Any = None

    @classmethod
    def from_calibrators(
        cls,
        calibrators: dict[str, Any],
        scores: Any,
        y: Any,
        *,
        n_bins: int = 10,
        strategy: str = "quantile",
        ci_prob: float = 0.95,
        grid: Any = None,
        n_consistency: int = 200,
        random_seed: Any = 0,
        maps: bool = True,
        points: bool = True,
        ax: Any = None,
    ) -> ReliabilityDisplay:
        """Compute and draw the diagram for several fitted calibrators on evaluation data.

        Two readings share the axes, so a figure usually shows one of them per panel:
        ``points=False`` draws the calibrators' maps against the raw score (with the raw
        scores' own binned frequencies for a ``None`` entry); ``maps=False`` draws each
        calibrator's binned calibrated probabilities with their consistency bands.

        Parameters
        ----------
        calibrators : dict[str, Calibrator or None]
            Label -> fitted calibrator; ``None`` shows the raw scores (probabilities).
        scores, y : array-like of shape (n,)
            Evaluation scores (input scale) and binary labels.
        n_bins, strategy
            Binning of the observed frequencies (:func:`bayescal.metrics.reliability_curve`).
        ci_prob : float, default 0.95
            Probability of the credible and consistency bands.
        grid : optional
            Score grid of the maps (see ``Calibrator.calibration_map``).
        n_consistency : int, default 200
            Label replicates of each consistency band; 0 draws none.
        random_seed : int, default 0
            Seed of the consistency replicates.
        maps, points : bool, default True
            Whether to compute and draw the calibrators' maps (and bands), and the binned
            points of their calibrated probabilities. A ``None`` entry always has its points.
        ax : matplotlib Axes, optional
            Draw the diagram there (no histograms); a new figure when None.
        """
        from bayescal._validation import check_labels, check_scores
        from bayescal.diagnostics import consistency_check
        from bayescal.metrics import reliability_curve

        y01, _ = check_labels(y)
        s = check_scores(scores, score_kind="decision")
        disp = cls(scores=s, y=y01)
        for label, est in calibrators.items():
            if est is None:
                p = check_scores(s, score_kind="probability")
            else:
                p = est.predict_proba(s)[:, 1]
                if maps:
                    cmap = est.calibration_map(grid)
                    disp.maps[label] = cmap.mean(("chain", "draw"))
                    if _n_draws(cmap) > 1:
                        disp.bands[label] = est.credible_band(grid, ci_prob=ci_prob)
                if not points:
                    continue
            disp.curves[label] = reliability_curve(y01, p, n_bins=n_bins, strategy=strategy)
            if n_consistency:
                check = consistency_check(p, y01, statistics="ece", n_bins=n_bins, strategy=strategy,
                                          n_replicates=n_consistency, ci_prob=ci_prob, random_seed=random_seed)
                disp.consistency[label] = check["band"]
        disp.plot(ax=ax)
        return disp

    def plot(self, ax: Any = None) -> ReliabilityDisplay:
        """Draw on ``ax`` (a new figure when ``None``): maps, bands, binned points, histograms.

        Maps are drawn against the score they calibrate; each binned point sits at the mean
        *predicted* probability of its bin (the raw score for ``None``, the calibrated one
        otherwise), annotated with its count, with the consistency band as a vertical bar.
        """
        import matplotlib.pyplot as plt

        if ax is None:
            fig, (ax, hax) = plt.subplots(2, 1, figsize=(6, 7), sharex=True,
                                          gridspec_kw={"height_ratios": [3, 1]})
        else:
            fig, hax = ax.figure, None
        ax.plot([0, 1], [0, 1], ls=":", color="grey", lw=1, label="perfect calibration")
        colors = _colors()
        labels = list(dict.fromkeys([*self.curves, *self.maps]))
        for i, label in enumerate(labels):
            c = colors[i % len(colors)]
            if label in self.maps:
                m = self.maps[label]
                ax.plot(m["score"].values, m.values, color=c, lw=1.8, label=f"{label} map", gid=f"map:{label}")
            if label in self.bands:
                b = self.bands[label]
                ax.fill_between(b["score"].values, b.sel(ci_bound="lower").values, b.sel(ci_bound="upper").values,
                                color=c, alpha=0.25, lw=0, label=f"{label} {b.attrs['ci_prob']:.0%} band",
                                gid=f"band:{label}")
            if label not in self.curves:
                continue
            curve = self.curves[label]
            x, f = curve["mean_predicted"].values, curve["fraction_positive"].values
            if label in self.consistency:
                cb = self.consistency[label]
                ax.vlines(x, cb.sel(ci_bound="lower").values, cb.sel(ci_bound="upper").values, color=c,
                          alpha=0.5, lw=3, gid=f"consistency:{label}")
            ax.plot(x, f, "o", color=c, ms=4, label=f"{label} binned", gid=f"binned:{label}")
            for xi, fi, n in zip(x, f, curve["count"].values):
                ax.annotate(f"{n:g}", (xi, fi), textcoords="offset points", xytext=(3, -9), fontsize=6, color=c,
                            gid=f"count:{label}")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_ylabel("P(y = 1 | score)" if self.maps else "observed fraction positive")
        mixed = any(lbl in self.maps for lbl in self.curves)  # a calibrator with both readings
        ax.set_xlabel("score (maps); mean predicted probability (binned points)" if mixed
                      else "score" if self.maps else "mean predicted probability")
        ax.legend(fontsize=7, loc="upper left")
        if hax is not None and self.scores is not None:
            bins = np.linspace(0, 1, 41)
            s = np.clip(self.scores, 0, 1)
            hax.hist(s[self.y == 0], bins=bins, alpha=0.6, label="class 0")
            hax.hist(s[self.y == 1], bins=bins, alpha=0.6, label="class 1")
            hax.set_xlabel("score")
            hax.set_ylabel("count")
            hax.legend(fontsize=8)
        self.figure_, self.ax_, self.hist_ax_ = fig, ax, hax
        return self


@dataclass
class DensityDisplay(_Display):
    """Class-conditional score densities: observed histograms against posterior densities.

    Attributes
    ----------
    checks : dict[str, xarray.Dataset]
        Per label, :func:`bayescal.diagnostics.score_density_check` (histograms, bin-averaged
        posterior densities, p-values).
    densities : dict[str, xarray.DataArray]
        Per label, the posterior-mean ``density_map`` over ``(class, score)``.
    bands : dict[str, xarray.DataArray]
        Per label, its pointwise band ``(class, score, ci_bound)``.
    """

    checks: dict[str, xr.Dataset] = field(default_factory=dict)
    densities: dict[str, xr.DataArray] = field(default_factory=dict)
    bands: dict[str, xr.DataArray] = field(default_factory=dict)
    figure_: Any = None
    axes_: Any = None

    @classmethod
    def from_calibrators(cls, calibrators: dict[str, Any], scores: Any, y: Any, *, bins: Any = 20,
                         grid: int = 301, ci_prob: float = 0.95, random_seed: Any = 0,
                         axes: Any = None) -> DensityDisplay:
        """Compute and draw for :class:`~bayescal.base.ClassConditional` calibrators (e.g. ``"dpm"``).

        The grid runs over the observed score range (``grid`` points).
        """
        import arviz_stats

        from bayescal.diagnostics import score_density_check

        disp = cls()
        for label, est in calibrators.items():
            check = score_density_check(est, scores, y, bins=bins, ci_prob=ci_prob, random_seed=random_seed)
            disp.checks[label] = check
            lo, hi = check["bin_lower"].values[0], check["bin_upper"].values[-1]
            dens = est.density_map(np.linspace(lo, hi, int(grid)))
            disp.densities[label] = dens.mean(("chain", "draw"))
            if _n_draws(dens) > 1:
                disp.bands[label] = arviz_stats.eti(dens, prob=ci_prob, dim=["chain", "draw"]).transpose(
                    "class", "score", "ci_bound")
        disp.plot(axes=axes)
        return disp

    def plot(self, axes: Any = None) -> DensityDisplay:
        """One panel per class: observed density histogram (stairs), posterior mean and band."""
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
                    ax.stairs(check["observed_density"].sel({"class": cls_}).values, edges, color="grey", lw=1.2,
                              label="observed", gid="observed")
                d = self.densities[label].sel({"class": cls_})
                ax.plot(d["score"].values, d.values, color=c, lw=1.6,
                        label=f"{label} (p = {float(check['p_value'].sel({'class': cls_})):.2f})",
                        gid=f"density:{label}")
                if label in self.bands:
                    b = self.bands[label].sel({"class": cls_})
                    ax.fill_between(b["score"].values, b.sel(ci_bound="lower").values,
                                    b.sel(ci_bound="upper").values, color=c, alpha=0.25, lw=0, gid=f"band:{label}")
            ax.set_title(f"class {cls_}")
            ax.set_xlabel("score")
            ax.legend(fontsize=7)
        axes[0].set_ylabel("density")
        self.figure_, self.axes_ = fig, axes
        return self


@dataclass
class PPCDisplay(_PredictionsDisplay):
    """Posterior predictive check of a reliability statistic: replicated histogram vs observed.

    Attributes
    ----------
    checks : dict[str, xarray.Dataset]
        Per label, :func:`bayescal.diagnostics.ppc_calibration` (calibrators) or
        :func:`bayescal.diagnostics.consistency_check` (raw probabilities).
    """

    checks: dict[str, xr.Dataset] = field(default_factory=dict)
    figure_: Any = None
    axes_: Any = None

    @classmethod
    def from_calibrators(cls, calibrators: dict[str, Any], scores: Any, y: Any, *,
                         statistics: Any = ("ece", "mcb"), n_bins: int = 10, random_seed: Any = 0,
                         axes: Any = None) -> PPCDisplay:
        """Labels replicated from each calibrator's posterior maps (``None``: the identity map)."""
        from bayescal.diagnostics import consistency_check, ppc_calibration

        disp = cls()
        for label, est in calibrators.items():
            if est is None:
                disp.checks[label] = consistency_check(scores, y, statistics=statistics, n_bins=n_bins, band=False,
                                                       random_seed=random_seed)
            else:
                disp.checks[label] = ppc_calibration(est, scores, y, statistics=statistics, n_bins=n_bins,
                                                     random_seed=random_seed)
        disp.plot(axes=axes)
        return disp

    def plot(self, axes: Any = None) -> PPCDisplay:
        """One panel per statistic: histogram of replicated values, a vertical line at the
        observed value (its posterior mean when it varies with the draw), p-value in the legend."""
        import matplotlib.pyplot as plt

        names = list(next(iter(self.checks.values()))["statistic"].values)
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
        self.figure_, self.axes_ = fig, axes
        return self


@dataclass
class DecisionDisplay(_Display):
    """Cost-optimal decision regions on the calibration map (Cohen & Goldszmidt 2004).

    Attributes
    ----------
    regions : dict[str, DecisionRegions]
        Per label, :func:`bayescal.decision.decision_regions`.
    maps, bands : dict[str, xarray.DataArray]
        Per label, the posterior-mean map and its credible band on the same grid.
    """

    regions: dict[str, Any] = field(default_factory=dict)
    maps: dict[str, xr.DataArray] = field(default_factory=dict)
    bands: dict[str, xr.DataArray] = field(default_factory=dict)
    figure_: Any = None
    ax_: Any = None

    @classmethod
    def from_calibrators(cls, calibrators: dict[str, Any], *, cost_fp: float = 1.0, cost_fn: float = 1.0,
                         grid: Any = 401, ci_prob: float = 0.95, ax: Any = None) -> DecisionDisplay:
        """Compute the regions of each calibrator and draw them under its map."""
        from bayescal.decision import decision_regions

        disp = cls()
        for label, est in calibrators.items():
            disp.regions[label] = decision_regions(est, cost_fp, cost_fn, grid=grid)
            cmap = est.calibration_map(grid)
            disp.maps[label] = cmap.mean(("chain", "draw"))
            if _n_draws(cmap) > 1:
                disp.bands[label] = est.credible_band(grid, ci_prob=ci_prob)
        disp.plot(ax=ax)
        return disp

    def plot(self, ax: Any = None) -> DecisionDisplay:
        """Map, band, the cut-off c* as a horizontal line, the 'predict 1' intervals as shaded
        spans along the bottom (one strip per calibrator), thresholds as dashed lines."""
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
                ax.fill_between(b["score"].values, b.sel(ci_bound="lower").values, b.sel(ci_bound="upper").values,
                                color=c, alpha=0.2, lw=0, gid=f"band:{label}")
            for lo, hi in reg.intervals:
                ax.axvspan(lo, hi, ymin=i / (10 * n), ymax=(i + 1) / (10 * n), color=c, alpha=0.6,
                           gid=f"predict1:{label}")
            for t in reg.thresholds:
                ax.axvline(t, color=c, ls="--", lw=1, gid=f"threshold:{label}")
        cut = next(iter(self.regions.values())).cutoff
        ax.axhline(cut, color="black", ls=":", lw=1, label=f"c* = {cut:.2f}", gid="cutoff")
        ax.set_ylim(0, 1)
        ax.set_xlabel("score")
        ax.set_ylabel("P(y = 1 | score)")
        ax.set_title("Decision regions (strips: predict 1)")
        ax.legend(fontsize=7)
        self.figure_, self.ax_ = fig, ax
        return self


def plot_ppc_pava(calibrator: Any, scores: Any, y: Any, *, ci_prob: float | None = None, random_seed: Any = None,
                  **kwargs: Any) -> Any:
    """ArviZ's PAV-adjusted calibration check of labels replicated from the calibrator.

    Builds :func:`bayescal.diagnostics.posterior_predictive_tree` and passes it to
    ``arviz_plots.plot_ppc_pava`` (Dimitriadis et al. 2021; Saeilynoja et al. 2026): the
    CORP reliability curve of the observed labels against the posterior-mean predictions,
    with the band of the replicated labels. Extra keyword arguments go to ArviZ.

    Returns
    -------
    arviz_plots.PlotCollection
    """
    import arviz_plots

    from bayescal.diagnostics import posterior_predictive_tree

    tree = posterior_predictive_tree(calibrator, scores, y, random_seed=random_seed)
    kwargs.setdefault("backend", "matplotlib")
    return arviz_plots.plot_ppc_pava(tree, var_names="y", ci_prob=ci_prob, **kwargs)
