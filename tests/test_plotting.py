"""Displays draw exactly what the compute functions return (read back from the Axes)."""

from __future__ import annotations

import subprocess
import sys
import warnings

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest

import bayescal
from bayescal import plotting as P
from bayescal.baselines.kde import KDECalibrator
from bayescal.baselines.platt import PlattScaling
from bayescal.datasets import simulate_scores


@pytest.fixture(scope="module")
def fitted():
    from bayescal.bayesian.dpm import DPMCalibrator

    d = simulate_scores("beta_bimodal", 300, random_state=0)
    with warnings.catch_warnings():  # one short chain: a noisy map, which the calibrator rightly says
        warnings.filterwarnings("ignore", "One chain cannot show", UserWarning)
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
        counts = [float(t.get_text().replace(",", "")) for t in _by_gid(ax, f"count:{label}")]
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
    counts, _ = np.histogram(d[y == 0], bins=np.linspace(d.min(), d.max(), 41))
    heights = [patch.get_height() for patch in disp.hist_ax_.patches][: counts.size]
    np.testing.assert_array_equal(heights, counts)
    (points_ax,) = [a for a in disp.figure_.axes if a not in (disp.ax_, disp.hist_ax_)]
    assert points_ax.get_xlim() == (0.0, 1.0) and _by_gid(points_ax, "binned:PlattScaling")


def _bar_heights(ax, gid):
    return np.array([patch.get_height() for patch in _by_gid(ax, gid)])


def test_reliability_display_of_decision_values_without_maps_histograms_their_probabilities():
    """Without maps the diagram's x-axis is the calibrated probability, so the histograms show those
    probabilities on that axis; a display built without them has the decision values over their own
    range (not clipped into [0, 1])."""
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, 500)
    d = rng.normal(size=500) + 1.5 * (2 * y - 1)
    platt = PlattScaling(score_kind="decision").fit(d, y)
    disp = P.ReliabilityDisplay.from_calibrator(platt, d, y, n_consistency=0, maps=False)
    p = platt.predict_proba(d)[:, 1]
    assert disp.ax_.get_xlim() == disp.hist_ax_.get_xlim() == (0.0, 1.0)
    assert disp.hist_ax_.get_shared_x_axes().joined(disp.ax_, disp.hist_ax_)
    np.testing.assert_array_equal(disp.predictions["PlattScaling"], p)
    for k in (0, 1):
        counts, _ = np.histogram(p[y == k], bins=np.linspace(0, 1, 41))
        np.testing.assert_array_equal(_bar_heights(disp.hist_ax_, f"hist:PlattScaling:{k}"), counts)
    assert disp.hist_ax_.get_xlabel() == "predicted probability"
    by_hand = P.ReliabilityDisplay(curves=disp.curves, scores=d, y=y).plot()
    assert by_hand.hist_ax_.get_xlim() == pytest.approx((d.min(), d.max()))
    assert not by_hand.hist_ax_.get_shared_x_axes().joined(by_hand.ax_, by_hand.hist_ax_)
    counts, _ = np.histogram(d[y == 0], bins=np.linspace(d.min(), d.max(), 41))
    np.testing.assert_array_equal(_bar_heights(by_hand.hist_ax_, "hist:score:0"), counts)
    assert by_hand.hist_ax_.get_xlabel() == "score"


def test_reliability_display_without_maps_histograms_what_the_x_axis_shows(atom_fit):
    """The report's case: 40 % of the positives have raw score 0, which the DPM calibrates to about
    0.99. With maps=False the diagram puts them near x = 1, and the histogram under it (same x-axis)
    showed raw scores, its tallest bar at x = 0 and nothing near 1. It shows the calibrated
    probabilities now."""
    s, y, dpm = atom_fit
    p = dpm.predict_proba(s)[:, 1]
    assert np.all(p[s == 0] > 0.9)
    disp = P.ReliabilityDisplay.from_calibrator(dpm, s, y, maps=False, n_consistency=0, label="dpm")
    hax = disp.hist_ax_
    assert hax.get_shared_x_axes().joined(disp.ax_, hax)
    near_one = sum(bar.get_height() for bar in hax.patches if bar.get_x() >= 0.9)
    assert near_one >= np.sum(s == 0)  # the rows at raw score 0 sit near x = 1, as in the diagram
    bins = np.linspace(0, 1, 41)
    for k in (0, 1):
        counts, _ = np.histogram(p[y == k], bins=bins)
        np.testing.assert_array_equal(_bar_heights(hax, f"hist:dpm:{k}"), counts)
    # several labels: a step histogram per label and class, each of that label's probabilities
    both = P.ReliabilityDisplay.from_calibrators({"raw": None, "dpm": dpm}, s, y, maps=False, n_consistency=0)
    for label, values in (("raw", s), ("dpm", p)):
        for k in (0, 1):
            (step,) = _by_gid(both.hist_ax_, f"hist:{label}:{k}")
            counts, _ = np.histogram(values[y == k], bins=bins)
            heights = step.get_path().vertices[:, 1]
            assert set(counts.tolist()) <= set(heights.tolist())
            assert heights.max() == counts.max()
    # with maps the x-axis is the score, and so is the histogram
    with_maps = P.ReliabilityDisplay.from_calibrator(dpm, s, y, n_consistency=0, label="dpm")
    counts, _ = np.histogram(s[y == 1], bins=bins)
    np.testing.assert_array_equal(_bar_heights(with_maps.hist_ax_, "hist:score:1"), counts)
    assert with_maps.hist_ax_.get_xlabel() == "score"


def test_reliability_display_refuses_drawing_nothing_and_non_bool_switches(fitted):
    d, cals = fitted
    with pytest.raises(ValueError, match="maps=False and points=False would draw nothing of the calibrators"):
        P.ReliabilityDisplay.from_calibrator(cals["platt"], d.scores, d.y, maps=False, points=False)
    for name in ("maps", "points"):
        with pytest.raises(ValueError, match=f"{name}='no' must be True or False"):
            P.ReliabilityDisplay.from_calibrator(cals["platt"], d.scores, d.y, n_consistency=0, **{name: "no"})
    with pytest.raises(ValueError, match="n_consistency=1000000000 is more than 1000000 replicates"):
        P.ReliabilityDisplay.from_predictions(d.y, d.scores, n_consistency=10**9)
    assert not plt.get_fignums()


def test_failed_drawings_leave_no_figure_open(fitted):
    """plot_ppc_pava with a keyword ArviZ refuses, and a PPCDisplay whose checks do not have the same
    statistics, raised after opening a figure, which stayed open."""
    import xarray as xr

    from bayescal.diagnostics import consistency_check, ppc_calibration

    d, cals = fitted
    _, mine = plt.subplots()  # the caller's own figure stays
    before = plt.get_fignums()
    with pytest.raises(ValueError):
        P.plot_ppc_pava(cals["platt"], d.scores, d.y, random_state=0, bogus=1)
    assert plt.get_fignums() == before
    raw = consistency_check(d.scores, d.y, n_replicates=50, band=False, random_state=0)
    ece = ppc_calibration(cals["platt"], d.scores, d.y, statistics="ece", random_state=0, min_replicates=50)
    with pytest.raises(ValueError, match=r"checks\['platt'\] has no statistic 'mcb', which checks\['raw'\] has"):
        P.PPCDisplay(checks={"raw": raw, "platt": ece}).plot()
    assert plt.get_fignums() == before
    drawn = P.PPCDisplay(checks={"platt": ece, "raw": raw}).plot()  # the other order: one panel, "ece"
    assert len(drawn.axes_) == 1 and _by_gid(drawn.axes_[0], "observed:raw")
    plt.close(drawn.figure_)
    with pytest.raises(KeyError):  # a hand-built curve without its numbers fails while drawing
        P.ReliabilityDisplay(curves={"bad": xr.Dataset()}).plot()
    assert plt.get_fignums() == before and mine.figure.number in before


def test_plot_ppc_pava_draws_the_same_band_by_default(fitted):
    """Its default random_state was None (a new band every call), unlike the Displays' 0."""
    d, cals = fitted

    def drawn(pc):
        fig = pc.viz["figure"].item()
        lines = [np.asarray(line.get_ydata(), float) for ax in fig.axes for line in ax.get_lines()]
        polys = [path.vertices for ax in fig.axes for coll in ax.collections for path in coll.get_paths()]
        return lines + polys

    first, second = (
        drawn(P.plot_ppc_pava(cals["platt"], d.scores, d.y)),
        drawn(P.plot_ppc_pava(cals["platt"], d.scores, d.y)),
    )
    assert len(first) == len(second) > 0
    assert all(np.array_equal(a, b) for a, b in zip(first, second))


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
    with pytest.raises(ValueError, match=r"y_prob has .* outside"):
        P.ReliabilityDisplay.from_predictions(d.y, d.scores * 2)


def test_ppc_display_of_text_labels_and_one_axes(fitted):
    d, _ = fitted
    words = np.where(d.y == 1, "spam", "ham")
    _, ax = plt.subplots()
    disp = P.PPCDisplay.from_predictions(words, d.scores, statistics="ece", axes=ax, pos_label="spam")
    by_code = P.PPCDisplay.from_predictions(d.y, d.scores, statistics="ece")
    assert isinstance(disp.axes_, np.ndarray) and disp.axes_.tolist() == [ax]
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


def _decision_data():
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, 500)
    return rng.normal(size=500) + 1.5 * (2 * y - 1), y


def test_density_band_of_ci_prob_none_is_the_package_default(fitted):
    """ci_prob=None drew ArviZ's 89% band while the check used 0.95."""
    import arviz_stats

    d, cals = fitted
    disp = P.DensityDisplay.from_calibrator(cals["dpm"], d.scores, d.y, grid=51, ci_prob=None)
    check = disp.checks["DPMCalibrator"]
    dens = cals["dpm"].density_map(np.linspace(check["bin_lower"].values[0], check["bin_upper"].values[-1], 51))
    band = arviz_stats.eti(dens, prob=0.95, dim=["chain", "draw"]).transpose("class", "score", "ci_bound")
    np.testing.assert_allclose(disp.bands["DPMCalibrator"].values, band.values)
    assert check.attrs["ci_prob"] == 0.95


def test_a_ci_prob_outside_0_1_is_refused_for_point_estimates_too(fitted):
    d, cals = fitted
    with pytest.raises(ValueError, match=r"ci_prob=1.5 must lie in \(0, 1\)"):
        P.ReliabilityDisplay.from_calibrator(cals["platt"], d.scores, d.y, ci_prob=1.5, n_consistency=0)
    with pytest.raises(ValueError, match=r"ci_prob=-3 must lie in \(0, 1\)"):
        P.DecisionDisplay.from_calibrator(cals["platt"], ci_prob=-3)
    with pytest.raises(ValueError, match=r"ci_prob=1.5 must lie in \(0, 1\)"):
        P.DensityDisplay.from_calibrator(KDECalibrator().fit(d.scores, d.y), d.scores, d.y, ci_prob=1.5)
    assert not plt.get_fignums()


def test_n_consistency_is_refused_by_its_own_name(fitted):
    """It was refused as n_replicates, the name of the function it is passed to."""
    d, _ = fitted
    for bad in (-1, 2.5, True):
        with pytest.raises(ValueError, match=f"n_consistency={bad!r} must be an integer of at least 0"):
            P.ReliabilityDisplay.from_predictions(d.y, d.scores, n_consistency=bad)


def test_decision_value_layout_does_not_depend_on_xarray_keep_attrs():
    """With keep_attrs=False the posterior-mean map lost score_scale: decision values were cut to [0, 1]."""
    import xarray as xr

    s, y = _decision_data()
    platt = PlattScaling(score_kind="decision").fit(s, y)
    with xr.set_options(keep_attrs=False):
        disp = P.ReliabilityDisplay.from_calibrator(platt, s, y, n_consistency=0)
    assert disp.ax_.get_xlim() == pytest.approx((s.min(), s.max()))
    assert disp.ax_.get_xlabel() == "decision value (maps)"


def test_scores_and_labels_of_different_lengths_are_refused_before_any_figure(fitted):
    d, cals = fitted
    short = d.scores[:200]
    for call in (
        lambda: P.ReliabilityDisplay.from_calibrator(cals["platt"], short, d.y, points=False),
        lambda: P.ReliabilityDisplay.from_calibrator(cals["platt"], short, d.y, n_consistency=0),
        lambda: P.PPCDisplay.from_calibrators({"raw": None, "platt": cals["platt"]}, short, d.y),
        lambda: P.DensityDisplay.from_calibrator(KDECalibrator().fit(d.scores, d.y), short, d.y),
    ):
        with pytest.raises(ValueError, match="Mismatched lengths: scores has 200, y has 300"):
            call()
    for cls in (P.ReliabilityDisplay, P.PPCDisplay):
        with pytest.raises(ValueError, match="Mismatched lengths: y_true has 200, y_prob has 300"):
            cls.from_predictions(d.y[:200], d.scores)
    assert not plt.get_fignums()


def test_feature_aware_calibrators_are_refused_by_the_display_s_name(fitted):
    d, _ = fitted
    X = np.random.default_rng(0).normal(size=(d.scores.size, 2))
    mbct = bayescal.make_calibrator("mbct").fit(d.scores, d.y, X=X)
    for name, call in (
        ("ReliabilityDisplay", lambda: P.ReliabilityDisplay.from_calibrator(mbct, d.scores, d.y, n_consistency=0)),
        ("ReliabilityDisplay", lambda: P.ReliabilityDisplay.from_calibrator(mbct, d.scores, d.y, maps=False)),
        ("PPCDisplay", lambda: P.PPCDisplay.from_calibrator(mbct, d.scores, d.y)),
        ("DecisionDisplay", lambda: P.DecisionDisplay.from_calibrator(mbct)),
        ("plot_ppc_pava", lambda: P.plot_ppc_pava(mbct, d.scores, d.y)),
    ):
        with pytest.raises(ValueError, match=f"^{name} reads a calibration map of scores alone, and MBCT depends"):
            call()
    with pytest.raises(ValueError, match="MBCT, which does not model the class score densities DensityDisplay draws"):
        P.DensityDisplay.from_calibrator(mbct, d.scores, d.y)
    assert not plt.get_fignums()


@pytest.mark.parametrize("grid", ["201", 2.7, True, -5, 1, 10**8])
def test_density_grid_must_be_a_number_of_points_or_scores(fitted, grid):
    d, _ = fitted
    kde = KDECalibrator().fit(d.scores, d.y)
    with pytest.raises(ValueError, match="grid="):
        P.DensityDisplay.from_calibrator(kde, d.scores, d.y, grid=grid)


def test_density_grid_may_be_an_array_of_scores(fitted):
    d, _ = fitted
    kde = KDECalibrator().fit(d.scores, d.y)
    grid = [0.9, 0.1, 0.5, 0.3]
    disp = P.DensityDisplay.from_calibrator(kde, d.scores, d.y, grid=grid, label="kde")
    for k, ax in enumerate(disp.axes_):
        (line,) = _by_gid(ax, "density:kde")
        np.testing.assert_array_equal(line.get_xdata(), np.sort(grid))
        np.testing.assert_allclose(line.get_ydata(), kde.density_map(np.sort(grid)).sel({"class": k}).values[0, 0])


def test_one_axes_in_an_array_is_drawn_on(fitted):
    d, cals = fitted
    for make in (
        lambda ax: P.ReliabilityDisplay.from_calibrator(cals["platt"], d.scores, d.y, ax=ax, n_consistency=0),
        lambda ax: P.DecisionDisplay.from_calibrator(cals["platt"], ax=ax),
    ):
        _, axs = plt.subplots(1, 1, squeeze=False)
        assert make(axs).ax_ is axs[0, 0]
        _, two = plt.subplots(1, 2)
        with pytest.raises(ValueError, match="ax holds 2 Axes but the diagram is drawn on one"):
            make(two)
        with pytest.raises(ValueError, match="ax='ax' is not a matplotlib Axes"):
            make("ax")


def test_repeated_statistics_are_refused(fitted):
    d, cals = fitted
    with pytest.raises(ValueError, match="names 'ece' more than once: name each statistic once"):
        P.PPCDisplay.from_predictions(d.y, d.scores, statistics=["ece", "ece"])
    with pytest.raises(ValueError, match="names 'ece' more than once"):
        P.PPCDisplay.from_calibrator(cals["platt"], d.scores, d.y, statistics=["ece", "mcb", "ece"])


def test_random_state_and_its_old_name_together_are_refused(fitted):
    d, _ = fitted
    for call in (
        lambda: P.ReliabilityDisplay.from_predictions(d.y, d.scores, random_state=3, random_seed=5, n_consistency=30),
        lambda: P.PPCDisplay.from_predictions(d.y, d.scores, random_state=3, random_seed=5),
    ):
        with pytest.raises(ValueError, match="pass random_state only; random_seed is its deprecated old name"):
            call()
    with pytest.warns(DeprecationWarning, match="random_seed is deprecated"):
        old = P.ReliabilityDisplay.from_predictions(d.y, d.scores, random_seed=5, n_consistency=30)
    new = P.ReliabilityDisplay.from_predictions(d.y, d.scores, random_state=5, n_consistency=30)
    np.testing.assert_array_equal(old.consistency["classifier"], new.consistency["classifier"])


def test_counts_and_cutoff_are_labelled_without_rounding_them_away():
    import xarray as xr

    curve = xr.Dataset(
        {
            "mean_predicted": ("bin", [0.25, 0.75]),
            "fraction_positive": ("bin", [0.2, 0.8]),
            "count": ("bin", [1234567.0, 2.5]),
        }
    )
    disp = P.ReliabilityDisplay(curves={"big": curve}).plot()
    assert [t.get_text() for t in _by_gid(disp.ax_, "count:big")] == ["1,234,567", "2.5"]
    s, y = _decision_data()
    platt = PlattScaling(score_kind="decision").fit(s, y)
    for cost_fp, cost_fn, text in ((1, 300, "0.00332"), (1, 3, "0.25"), (10**5, 1, "0.99999")):
        (cut,) = _by_gid(P.DecisionDisplay.from_calibrator(platt, cost_fp=cost_fp, cost_fn=cost_fn).ax_, "cutoff")
        assert cut.get_label() == f"c* = {text}"


def test_empty_displays_and_array_pos_labels_are_refused(fitted):
    d, cals = fitted
    with pytest.raises(ValueError, match=r"no checks to draw: build it with PPCDisplay\.from_calibrators"):
        P.PPCDisplay().plot()
    with pytest.raises(ValueError, match=r"no regions to draw: build it with DecisionDisplay\.from_calibrators"):
        P.DecisionDisplay().plot()
    for call in (
        lambda: P.ReliabilityDisplay.from_calibrator(cals["platt"], d.scores, d.y, pos_label=np.array([1, 1])),
        lambda: P.ReliabilityDisplay.from_predictions(d.y, d.scores, pos_label=np.array([1, 1])),
    ):
        with pytest.raises(ValueError, match=r"pos_label=array\(\[1, 1\]\) is not a single label"):
            call()


@pytest.fixture(scope="module")
def atom_fit():
    """Scores with a point mass at exactly 0.0, 40 % of the positives (a fallback score)."""
    from bayescal.bayesian.dpm import DPMCalibrator

    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 600)
    s = np.clip(rng.beta(2 + 2 * y, 4 - 2 * y), 0.001, 0.999)
    s[(y == 1) & (rng.random(600) < 0.4)] = 0.0
    with warnings.catch_warnings():  # one short chain: a noisy map, which the calibrator rightly says
        warnings.filterwarnings("ignore", "One chain cannot show", UserWarning)
        dpm = DPMCalibrator(random_state=0, draws=100, chains=1, tune=60).fit(s, y)
    assert 0.0 in dpm.score_atoms()["atom"].values
    return s, y, dpm


def test_density_display_draws_score_atoms_with_their_mass(atom_fit):
    """The curve is the continuous part only: the atom's mass was missing from the drawing."""
    s, y, dpm = atom_fit
    disp = P.DensityDisplay.from_calibrator(dpm, s, y, label="dpm", grid=301)
    check = disp.checks["dpm"]
    lo, hi = float(check["bin_lower"][0]), float(check["bin_upper"][0])
    mass = dpm.score_atoms().mean(("chain", "draw")).sel(atom=0.0)
    for k, ax in enumerate(disp.axes_):
        (stem,) = _by_gid(ax, "atom:dpm")
        ((x0, y0), (x1, y1)) = stem.get_segments()[0]
        assert x0 == x1 == 0.0 and y0 == 0.0
        assert y1 == pytest.approx(float(mass.sel({"class": k})) / (hi - lo))
        (text,) = _by_gid(ax, "atom_mass:dpm")
        assert text.get_text() == f"{float(mass.sel({'class': k})):.2g}"
    # class 1: curve over the first bin plus the stem is the model density the check compares
    curve = disp.densities["dpm"].sel({"class": 1})
    first = curve.where((curve["score"] >= lo) & (curve["score"] <= hi), drop=True)
    drawn = float(first.mean()) + float(mass.sel({"class": 1})) / (hi - lo)
    model = float(check["density"].sel({"class": 1}).isel(bin=0).mean())
    assert drawn == pytest.approx(model, rel=0.1)
    assert float(check["observed_density"].sel({"class": 1}).isel(bin=0)) == pytest.approx(model, rel=0.25)


def test_decision_and_reliability_displays_draw_atoms_apart_from_the_map(atom_fit):
    """An atom decided 'predict 1' had no strip, and its map value was joined into the map line."""
    from bayescal.decision import decision_regions

    s, y, dpm = atom_fit
    reg = decision_regions(dpm, 1.0, 1.0, grid=401)
    (rule,) = reg.atom_rule[reg.atoms == 0.0]
    assert rule == 1  # P(y = 1 | s = 0) is high: predict 1 there, unlike the scores just above 0
    at_zero = float(dpm.calibration_map([0.0]).mean())
    disp = P.DecisionDisplay.from_calibrator(dpm, cost_fp=1.0, cost_fn=1.0)
    ax = disp.ax_
    (strip,) = _by_gid(ax, "predict1_atom:DPMCalibrator")
    assert strip.get_xdata()[0] == 0.0
    (marker,) = _by_gid(ax, "atom:DPMCalibrator")
    assert marker.get_xdata()[0] == 0.0 and marker.get_ydata()[0] == pytest.approx(at_zero)
    for drawn in (disp, P.ReliabilityDisplay.from_calibrator(dpm, s, y, n_consistency=0)):
        (line,) = _by_gid(drawn.ax_, "map:DPMCalibrator")
        assert 0.0 not in line.get_xdata()
        assert _by_gid(drawn.ax_, "atom:DPMCalibrator")


def test_displays_drawn_on_the_callers_axes_keep_what_is_there(fitted):
    """Drawing twice on one axes adds no second diagonal; a caller's titles stay; the panels drawn
    on come back as an array whether passed as a list or made by the display."""
    d, cals = fitted
    _, ax = plt.subplots()
    for label in ("platt", "dpm"):
        P.ReliabilityDisplay.from_calibrators({label: cals[label]}, d.scores, d.y, ax=ax, n_consistency=0)
    assert len(_by_gid(ax, "diagonal")) == 1
    assert ax.get_legend_handles_labels()[1].count("perfect calibration") == 1
    _, axes = plt.subplots(1, 3)
    axes[0].set_title("mine")
    disp = P.DensityDisplay.from_calibrators({"dpm": cals["dpm"]}, d.scores, d.y, axes=list(axes))
    assert [a.get_title() for a in axes[:2]] == ["mine", "class 1"]
    assert isinstance(disp.axes_, np.ndarray) and disp.axes_.tolist() == list(axes[:2])
    own = P.DensityDisplay.from_calibrators({"dpm": cals["dpm"]}, d.scores, d.y)
    assert isinstance(own.axes_, np.ndarray) and own.axes_.shape == (2,)
