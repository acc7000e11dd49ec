"""Reliability diagrams with credible bands (matplotlib, imported on first use).

Compute first, draw second: :class:`ReliabilityDisplay` holds exactly what
:func:`bayescal.metrics.reliability_curve` and ``Calibrator.calibration_map`` /
``credible_band`` return, and ``plot`` draws those numbers, so a test can check that what
is drawn is what was computed (scikit-learn's ``CalibrationDisplay`` pattern).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import xarray as xr

__all__ = ["ReliabilityDisplay"]


@dataclass
class ReliabilityDisplay:
    """A reliability diagram: calibration maps with bands, binned frequencies, score histograms.

    Attributes
    ----------
    curves : dict[str, xarray.Dataset]
        Per label, the binned reliability curve (``bin`` dimension) of the calibrated
        probabilities on the evaluation data.
    maps : dict[str, xarray.DataArray]
        Per label, the posterior-mean calibration map over a score grid (input scale).
    bands : dict[str, xarray.DataArray]
        Per label, the credible band ``(score, ci_bound)`` (point estimates have none).
    scores, y : ndarray
        The evaluation scores (input scale) and 0/1 labels, for the histograms.
    """

    curves: dict[str, xr.Dataset] = field(default_factory=dict)
    maps: dict[str, xr.DataArray] = field(default_factory=dict)
    bands: dict[str, xr.DataArray] = field(default_factory=dict)
    scores: np.ndarray | None = None
    y: np.ndarray | None = None
    figure_: Any = None
    ax_: Any = None

    @classmethod
    def from_calibrators(
        cls,
        calibrators: dict[str, Any],
        scores: Any,
        y: Any,
        *,
        n_bins: int = 10,
        ci_prob: float = 0.95,
        grid: Any = None,
        ax: Any = None,
    ) -> "ReliabilityDisplay":
        """Compute and draw the diagram for several fitted calibrators on evaluation data.

        The label ``"uncalibrated"`` maps to ``None`` to show the raw scores (probabilities).
        """
        from bayescal._validation import check_labels, check_scores
        from bayescal.metrics import reliability_curve

        y01, _ = check_labels(y)
        s = check_scores(scores, score_kind="decision")
        disp = cls(scores=s, y=y01)
        for label, est in calibrators.items():
            if est is None:
                p = check_scores(s, score_kind="probability")
            else:
                p = est.predict_proba(s)[:, 1]
                cmap = est.calibration_map(grid)
                disp.maps[label] = cmap.mean(("chain", "draw"))
                if cmap.sizes["chain"] * cmap.sizes["draw"] > 1:
                    disp.bands[label] = est.credible_band(grid, ci_prob=ci_prob)
            disp.curves[label] = reliability_curve(y01, p, n_bins=n_bins)
        disp.plot(ax=ax)
        return disp

    def plot(self, ax: Any = None) -> "ReliabilityDisplay":
        """Draw on ``ax`` (a new figure when ``None``): maps, bands, binned points, histograms."""
        import matplotlib.pyplot as plt

        if ax is None:
            fig, (ax, hax) = plt.subplots(2, 1, figsize=(6, 7), sharex=True,
                                          gridspec_kw={"height_ratios": [3, 1]})
        else:
            fig, hax = ax.figure, None
        ax.plot([0, 1], [0, 1], ls=":", color="grey", lw=1, label="perfect calibration")
        colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
        for i, (label, curve) in enumerate(self.curves.items()):
            c = colors[i % len(colors)]
            if label in self.maps:
                m = self.maps[label]
                ax.plot(m["score"].values, m.values, color=c, lw=1.8, label=f"{label} map")
            if label in self.bands:
                b = self.bands[label]
                ax.fill_between(b["score"].values, b.sel(ci_bound="lower").values, b.sel(ci_bound="upper").values,
                                color=c, alpha=0.25, lw=0, label=f"{label} {b.attrs['ci_prob']:.0%} band")
            ax.plot(curve["mean_predicted"].values, curve["fraction_positive"].values, "o", color=c, ms=4,
                    label=f"{label} binned" if label not in self.maps else None)
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_ylabel("P(y = 1 | score)")
        ax.legend(fontsize=8, loc="upper left")
        if hax is not None and self.scores is not None:
            bins = np.linspace(0, 1, 41)
            s = np.clip(self.scores, 0, 1)
            hax.hist(s[self.y == 0], bins=bins, alpha=0.6, label="class 0")
            hax.hist(s[self.y == 1], bins=bins, alpha=0.6, label="class 1")
            hax.set_xlabel("score")
            hax.set_ylabel("count")
            hax.legend(fontsize=8)
        self.figure_, self.ax_ = fig, ax
        return self
