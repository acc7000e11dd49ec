"""Displays draw exactly what the compute functions return (read back from the Axes)."""

from __future__ import annotations

import subprocess
import sys

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest

from bayescal import plotting as P
from bayescal.baselines.platt import PlattScaling
from bayescal.datasets import simulate_scores


@pytest.fixture(scope="module")
def fitted():
    from bayescal.bayesian.dpm import DPMCalibrator

    d = simulate_scores("beta_bimodal", 300, random_state=0)
    dpm = DPMCalibrator(random_state=0, draws=100, chains=1, tune=60).fit(d.scores, d.y)
    platt = PlattScaling().fit(d.scores, d.y)
    return d, {"dpm": dpm, "platt": platt}


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def _by_gid(ax, gid):
    return [a for a in ax.get_children() if a.get_gid() == gid]


def _band_vertices_match(coll, x, lower, upper):
    """A fill_between polygon passes through (x, lower) and (x, upper) for every x."""
    v = np.vstack([p.vertices for p in coll.get_paths()])
    for xs, ys in ((x, lower), (x, upper)):
        pts = np.column_stack([xs, ys])
        d = np.min(np.abs(v[None, :, :] - pts[:, None, :]).sum(axis=-1), axis=1)
        assert np.all(d < 1e-9)


def test_reliability_display_draws_what_it_computes(fitted):
    from bayescal.metrics import reliability_curve

    d, cals = fitted
    disp = P.ReliabilityDisplay.from_calibrators(
        {"raw": None, **cals}, d.scores, d.y, n_bins=8, grid=101, n_consistency=50
    )
    ax = disp.ax_
    assert set(disp.curves) == {"raw", "dpm", "platt"}
    assert set(disp.bands) == {"dpm"}  # the one-draw Platt map has no band
    for label, est in cals.items():
        (line,) = _by_gid(ax, f"map:{label}")
        expected = est.calibration_map(101).mean(("chain", "draw"))
        np.testing.assert_allclose(line.get_xdata(), expected["score"].values)
        np.testing.assert_allclose(line.get_ydata(), expected.values)
    band = cals["dpm"].credible_band(101, ci_prob=0.95)
    (coll,) = _by_gid(ax, "band:dpm")
    _band_vertices_match(
        coll, band["score"].values, band.sel(ci_bound="lower").values, band.sel(ci_bound="upper").values
    )
    for label in disp.curves:
        p = d.scores if label == "raw" else cals[label].predict_proba(d.scores)[:, 1]
        curve = reliability_curve(d.y, p, n_bins=8)
        (pts,) = _by_gid(ax, f"binned:{label}")
        np.testing.assert_allclose(pts.get_xdata(), curve["mean_predicted"].values)
        np.testing.assert_allclose(pts.get_ydata(), curve["fraction_positive"].values)
        counts = [float(t.get_text()) for t in _by_gid(ax, f"count:{label}")]
        np.testing.assert_allclose(counts, curve["count"].values)
        (vl,) = _by_gid(ax, f"consistency:{label}")
        segs = np.array(vl.get_segments())  # (bin, 2 ends, xy)
        cb = disp.consistency[label]
        np.testing.assert_allclose(segs[:, 0, 0], curve["mean_predicted"].values)
        np.testing.assert_allclose(segs[:, 0, 1], cb.sel(ci_bound="lower").values)
        np.testing.assert_allclose(segs[:, 1, 1], cb.sel(ci_bound="upper").values)
    # class histograms underneath hold every score once
    heights = sum(patch.get_height() for patch in disp.hist_ax_.patches)
    assert heights == d.scores.size


def test_reliability_from_predictions_and_from_calibrator(fitted):
    d, cals = fitted
    raw = P.ReliabilityDisplay.from_predictions(d.y, d.scores, n_consistency=30)
    assert list(raw.curves) == ["classifier"] and not raw.maps and "classifier" in raw.consistency
    one = P.ReliabilityDisplay.from_calibrator(cals["platt"], d.scores, d.y, n_consistency=0)
    assert list(one.maps) == ["PlattScaling"] and not one.consistency
    _fig, ax = plt.subplots()
    drawn = P.ReliabilityDisplay.from_calibrator(cals["dpm"], d.scores, d.y, label="DPM", ax=ax, n_consistency=0)
    assert drawn.ax_ is ax and drawn.hist_ax_ is None


def test_reliability_display_codes_text_labels_as_the_calibrator_was_fitted():
    """A calibrator fitted with pos_label="fraud" (not the greater word): the diagram's observed
    frequencies are those of "fraud", as its probabilities are (they were of "ok", inverted)."""
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 400)
    p = np.clip(0.2 + 0.6 * y + rng.normal(0, 0.1, 400), 0.01, 0.99)
    words = np.where(y == 1, "fraud", "ok")
    platt = PlattScaling().fit(p, words, pos_label="fraud")
    disp = P.ReliabilityDisplay.from_calibrator(platt, p, words, n_consistency=0)
    curve = next(iter(disp.curves.values()))
    np.testing.assert_allclose(
        curve["fraction_positive"],
        P.ReliabilityDisplay.from_predictions(y, platt.predict_proba(p)[:, 1], n_consistency=0).curves["classifier"][
            "fraction_positive"
        ],
    )
    with pytest.raises(ValueError, match="pos_label="):
        P.ReliabilityDisplay.from_predictions(words, p, n_consistency=0)
    raw = P.ReliabilityDisplay.from_predictions(words, p, n_consistency=0, pos_label="fraud")
    assert raw.curves["classifier"]["fraction_positive"].values[-1] == 1.0
    with pytest.raises(ValueError, match="positive class is 'fraud'"):
        P.ReliabilityDisplay.from_calibrator(platt, p, words, n_consistency=0, pos_label="ok")


def test_reliability_display_of_decision_values_spans_their_range():
    """Maps of decision values are drawn over the scores' range with an unclipped histogram; the
    binned probabilities go on their own [0, 1] axis."""
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, 500)
    d = rng.normal(size=500) + 1.5 * (2 * y - 1)
    platt = PlattScaling(score_kind="decision").fit(d, y)
    disp = P.ReliabilityDisplay.from_calibrator(platt, d, y, n_consistency=0)
    assert disp.ax_.get_xlim() == pytest.approx((d.min(), d.max()))
    counts, edges = np.histogram(d[y == 0], bins=np.linspace(d.min(), d.max(), 41))
    heights = [patch.get_height() for patch in disp.hist_ax_.patches][: counts.size]
    np.testing.assert_array_equal(heights, counts)
    (points_ax,) = [a for a in disp.figure_.axes if a not in (disp.ax_, disp.hist_ax_)]
    assert points_ax.get_xlim() == (0.0, 1.0) and _by_gid(points_ax, "binned:PlattScaling")


def test_reliability_display_of_decision_values_without_maps_keeps_their_histogram():
    """With only the binned probabilities drawn ([0, 1]), the decision values' histogram gets its
    own axis over their range instead of being clipped into [0, 1]."""
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, 500)
    d = rng.normal(size=500) + 1.5 * (2 * y - 1)
    platt = PlattScaling(score_kind="decision").fit(d, y)
    disp = P.ReliabilityDisplay.from_calibrator(platt, d, y, n_consistency=0, maps=False)
    assert disp.ax_.get_xlim() == (0.0, 1.0)
    assert disp.hist_ax_.get_xlim() == pytest.approx((d.min(), d.max()))
    counts, _ = np.histogram(d[y == 0], bins=np.linspace(d.min(), d.max(), 41))
    heights = [patch.get_height() for patch in disp.hist_ax_.patches][: counts.size]
    np.testing.assert_array_equal(heights, counts)


def test_displays_draw_given_grids_in_order_and_name_their_band_exactly(fitted):
    d, cals = fitted
    grid = [0.9, 0.1, 0.5, 0.3]
    for disp in (
        P.DecisionDisplay.from_calibrator(cals["dpm"], grid=grid, ci_prob=0.999),
        P.ReliabilityDisplay.from_calibrator(cals["dpm"], d.scores, d.y, grid=grid, n_consistency=0, ci_prob=0.999),
    ):
        (line,) = _by_gid(disp.ax_, "map:DPMCalibrator")
        np.testing.assert_array_equal(line.get_xdata(), np.sort(grid))
    labels = [t.get_text() for t in disp.ax_.get_legend().get_texts()]
    assert "DPMCalibrator 99.9% band" in labels


def test_displays_refuse_what_they_cannot_draw(fitted):
    from sklearn.exceptions import NotFittedError

    d, cals = fitted
    with pytest.raises(NotFittedError):
        P.ReliabilityDisplay.from_calibrators({"platt": PlattScaling()}, d.scores, d.y)
    with pytest.raises(ValueError, match="not a bayescal calibrator"):
        P.ReliabilityDisplay.from_calibrators({"platt": "platt"}, d.scores, d.y)
    for empty in (
        lambda: P.ReliabilityDisplay.from_calibrators({}, d.scores, d.y),
        lambda: P.PPCDisplay.from_calibrators({}, d.scores, d.y),
        lambda: P.DensityDisplay.from_calibrators({}, d.scores, d.y),
        lambda: P.DecisionDisplay.from_calibrators({}),
    ):
        with pytest.raises(ValueError, match="non-empty mapping"):
            empty()
    _, ax = plt.subplots()
    with pytest.raises(ValueError, match="axes has 1 Axes but the figure needs 2, one per class"):
        P.DensityDisplay.from_calibrator(cals["dpm"], d.scores, d.y, axes=ax)
    with pytest.raises(ValueError, match="y_prob has .* outside"):
        P.ReliabilityDisplay.from_predictions(d.y, d.scores * 2)


def test_ppc_display_of_text_labels_and_one_axes(fitted):
    d, _ = fitted
    words = np.where(d.y == 1, "spam", "ham")
    _, ax = plt.subplots()
    disp = P.PPCDisplay.from_predictions(words, d.scores, statistics="ece", axes=ax, pos_label="spam")
    by_code = P.PPCDisplay.from_predictions(d.y, d.scores, statistics="ece")
    assert disp.axes_ == [ax]
    np.testing.assert_array_equal(disp.checks["classifier"]["p_value"], by_code.checks["classifier"]["p_value"])
    with pytest.raises(ValueError, match="pos_label="):
        P.PPCDisplay.from_predictions(words, d.scores)


def test_density_display_draws_the_density_check(fitted):
    import arviz_stats

    from bayescal.diagnostics import score_density_check

    d, cals = fitted
    disp = P.DensityDisplay.from_calibrator(cals["dpm"], d.scores, d.y, label="dpm", bins=12, grid=101)
    check = score_density_check(cals["dpm"], d.scores, d.y, bins=12, random_state=0)
    lo, hi = check["bin_lower"].values[0], check["bin_upper"].values[-1]
    dens = cals["dpm"].density_map(np.linspace(lo, hi, 101))
    band = arviz_stats.eti(dens, prob=0.95, dim=["chain", "draw"])
    for k, ax in enumerate(disp.axes_):
        (stairs,) = _by_gid(ax, "observed")
        np.testing.assert_allclose(stairs.get_data().values, check["observed_density"].sel({"class": k}).values)
        (line,) = _by_gid(ax, "density:dpm")
        np.testing.assert_allclose(line.get_ydata(), dens.mean(("chain", "draw")).sel({"class": k}).values)
        (coll,) = _by_gid(ax, "band:dpm")
        b = band.sel({"class": k})
        _band_vertices_match(coll, b["score"].values, b.sel(ci_bound="lower").values, b.sel(ci_bound="upper").values)
        assert f"p = {float(check['p_value'].sel({'class': k})):.2f}" in line.get_label()


def test_ppc_display_marks_the_observed_statistic_and_p_value(fitted):
    from bayescal.diagnostics import consistency_check, ppc_calibration

    d, cals = fitted
    disp = P.PPCDisplay.from_calibrators({"raw": None, "platt": cals["platt"]}, d.scores, d.y, random_state=3)
    ppc = ppc_calibration(cals["platt"], d.scores, d.y, random_state=3)
    cons = consistency_check(d.scores, d.y, band=False, random_state=3)
    for k, name in enumerate(["ece", "mcb"]):
        ax = disp.axes_[k]
        for label, ref in (("platt", ppc), ("raw", cons)):
            (vline,) = _by_gid(ax, f"observed:{label}")
            assert vline.get_xdata()[0] == pytest.approx(float(ref["observed"].sel(statistic=name).mean()))
            assert f"p = {float(ref['p_value'].sel(statistic=name)):.3f}" in vline.get_label()
            bars = _by_gid(ax, f"replicated:{label}")
            assert len(bars) == 30
            widths = np.array([b.get_width() for b in bars])
            heights = np.array([b.get_height() for b in bars])
            assert np.sum(widths * heights) == pytest.approx(1.0)  # a density histogram of the replicates
    raw = P.PPCDisplay.from_predictions(d.y, d.scores, statistics="ece")
    assert len(raw.axes_) == 1


def test_decision_display_shows_the_regions(fitted):
    from bayescal.decision import decision_regions

    _d, cals = fitted
    disp = P.DecisionDisplay.from_calibrators(cals, cost_fp=1.0, cost_fn=2.0, grid=201)
    ax = disp.ax_
    for label, est in cals.items():
        reg = decision_regions(est, 1.0, 2.0, grid=201)
        xs = sorted(line.get_xdata()[0] for line in _by_gid(ax, f"threshold:{label}"))
        np.testing.assert_allclose(xs, reg.thresholds)
        spans = _by_gid(ax, f"predict1:{label}")
        assert len(spans) == len(reg.intervals)
        for span, (lo, hi) in zip(spans, reg.intervals):
            assert span.get_x() == pytest.approx(lo) and span.get_x() + span.get_width() == pytest.approx(hi)
    # the U-shaped truth: the DPM map crosses 1/3 twice, so two thresholds
    assert disp.regions["dpm"].thresholds.size == 2
    (cut,) = _by_gid(ax, "cutoff")
    assert cut.get_ydata()[0] == pytest.approx(1 / 3)


def test_plot_ppc_pava_uses_arviz(fitted):
    import arviz_plots
    from arviz_stats.helper_stats import isotonic_fit

    from bayescal.diagnostics import posterior_predictive_tree

    d, cals = fitted
    pc = P.plot_ppc_pava(cals["dpm"], d.scores, d.y, ci_prob=0.9, random_state=0)
    assert isinstance(pc, arviz_plots.PlotCollection)
    ref = isotonic_fit(
        posterior_predictive_tree(cals["dpm"], d.scores, d.y, random_state=0), ["y"], "posterior_predictive", 0.9
    )["y"]
    lines = [ln for ax in pc.viz["figure"].item().axes for ln in ax.get_lines()]
    drawn = [ln for ln in lines if len(ln.get_xdata()) == ref.sizes["x_values"]]
    assert any(np.allclose(ln.get_ydata(), ref.sel(plot_axis="y").values) for ln in drawn)


def test_import_bayescal_loads_neither_matplotlib_nor_pymc():
    code = (
        "import sys, bayescal, bayescal.plotting, bayescal.diagnostics; "
        "print(any(m.split('.')[0] in ('matplotlib', 'pymc') for m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
