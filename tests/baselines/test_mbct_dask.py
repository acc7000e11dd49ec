"""MBCT on Dask collections (rows reduced where they live to per-combination sums), and
1-D calibrators given Dask inputs in ``fit`` (reduced to a ScoreSummary)."""

from __future__ import annotations

import re

import dask
import dask.array as da
import dask.dataframe as dd
import dask.distributed as distributed
import numpy as np
import pandas as pd
import pytest
from scipy.special import expit

import bayescal
from bayescal._stats import quantile_sketch, sketch_quantile, weighted_quantile
from bayescal.baselines.isotonic import IsotonicCalibrator
from bayescal.baselines.mbct import MBCT
from bayescal.data import ScoreSummary

FEATURES = ["region", "age", "noise"]


@pytest.fixture(autouse=True)
def synchronous_scheduler():
    with dask.config.set(scheduler="sync"):
        yield


def simulate(n: int, seed: int) -> tuple[pd.DataFrame, np.ndarray]:
    """A string feature and a continuous one that change the calibration, a noise feature, the truth."""
    rng = np.random.default_rng(seed)
    s = expit(rng.normal(-0.5, 1.2, n))
    region = rng.choice(["north", "south", "east"], n)
    age = rng.uniform(18, 80, n)
    k = np.where(region == "south", 1.4, 0.8) * np.where(age > 50, 1.2, 0.9)
    p_true = np.minimum(k * s, 1.0)
    y = (rng.random(n) < p_true).astype(int)
    frame = pd.DataFrame({"score": s, "label": y, "region": region, "age": age, "noise": rng.integers(0, 4, n)})
    return frame, p_true


def fit_dask(ddf: dd.DataFrame, **params) -> MBCT:
    return MBCT(**params).fit(ddf["score"], ddf["label"], X=ddf[FEATURES])


def weighted_rank(x: np.ndarray, w: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Share of the weight strictly below and at most ``v``."""
    order = np.argsort(x)
    cum = np.concatenate([[0.0], np.cumsum(w[order])]) / w.sum()
    return cum[np.searchsorted(x[order], v, side="left")], cum[np.searchsorted(x[order], v, side="right")]


def test_quantile_sketch_merges_within_its_rank_error():
    rng = np.random.default_rng(0)
    parts = [
        (rng.lognormal(rng.normal(), 1.0 + rng.random(), n), rng.exponential(1.0, n))
        for n in rng.integers(2_000, 20_000, 12)
    ]
    x, w = (np.concatenate(v) for v in zip(*parts))
    q = np.linspace(0.001, 0.999, 999)
    below, upto = weighted_rank(x, w, sketch_quantile([quantile_sketch(a, b) for a, b in parts], q))
    # the documented bound is 1.5 / size; 0.3 / size was measured here
    assert np.all((below <= q + 1.5e-3) & (upto >= q - 1.5e-3))
    small = [(a[:500], b[:500]) for a, b in parts]  # a sample of at most `size` values is its own sketch
    np.testing.assert_array_equal(
        sketch_quantile([quantile_sketch(a, b) for a, b in small], q),
        weighted_quantile(np.concatenate([a for a, _ in small]), q, np.concatenate([b for _, b in small])),
    )
    # weights so large that their total is not a float: the sketch's points are the same quantiles
    x0, w0 = parts[0]
    with np.errstate(over="raise"):
        points, weights = quantile_sketch(x0, w0 * 1e306)
    np.testing.assert_allclose(points, quantile_sketch(x0, w0)[0], rtol=1e-9)
    assert np.all(weights == np.inf)
    assert quantile_sketch(x0, np.zeros_like(w0))[0].size == 0  # no weight at all: an empty sketch


def test_dask_fit_agrees_with_the_numpy_fit():
    frame, _ = simulate(40_000, 1)
    new, p_new = simulate(20_000, 2)
    ddf = dd.from_pandas(frame, npartitions=4)
    a = fit_dask(ddf, random_state=0)
    b = MBCT(random_state=0).fit(frame["score"], frame["label"], X=frame[FEATURES])
    # the encoding: kinds and levels exact, continuous edges and score range within the sketch's rank error
    assert a.feature_kinds_ == b.feature_kinds_ == ["categorical", "continuous", "categorical"]
    for la, lb in zip(a.feature_levels_, b.feature_levels_):
        np.testing.assert_array_equal(la, lb)
    q = b._feature_quantiles()
    below, upto = weighted_rank(frame["age"].to_numpy(), np.ones(len(frame)), a.feature_edges_[1])
    assert a.feature_edges_[1].size == q.size and np.all((below <= q + 1.5e-3) & (upto >= q - 1.5e-3))
    t = np.log(frame["score"] / (1 - frame["score"])).to_numpy()
    step = a.score_edges_[1] - a.score_edges_[0]  # the inner edges of n_score_bins equal bins of [lo, hi]
    lo_hi, tails = np.array([a.score_edges_[0] - step, a.score_edges_[-1] + step]), np.array([0.005, 0.995])
    below, upto = weighted_rank(t, np.ones(t.size), lo_hi)
    assert np.all((below <= tails + 1.5e-3) & (upto >= tails - 1.5e-3))
    for name in ("classes_", "score_range_", "n_codes_"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert (a.n_features_x_, a.n_features_in_) == (b.n_features_x_, 1)
    assert abs(a.n_combinations_ - b.n_combinations_) < 0.01 * b.n_combinations_  # the age edges differ a little
    # the training/validation split differs, so the trees do: compare quality, not values.
    # Measured over random_state 0-3: mean |p - p_true| 0.010-0.015 on either route (0.098
    # uncalibrated), predictions 0.010-0.012 apart on average.
    pa, pb = (est.predict_proba(new["score"], X=new[FEATURES])[:, 1] for est in (a, b))
    err_a, err_b = np.mean(np.abs(pa - p_new)), np.mean(np.abs(pb - p_new))
    assert max(err_a, err_b) < 0.2 * np.mean(np.abs(new["score"] - p_new))
    assert abs(err_a - err_b) < 0.01
    assert np.mean(np.abs(pa - pb)) < 0.025


def test_a_parquet_frame_fits_as_the_same_rows_in_memory(tmp_path):
    """Columns of a frame read from Parquet files: the optimiser fused a column's and a slice of
    columns' small partitions differently ("Mismatched partitions: scores has 2, y has 2, X has
    4"), so the README's example failed; the fit now equals the one on a frame built in memory."""
    frame, _ = simulate(8_000, 3)
    for i in range(4):
        frame.iloc[i * 2_000 : (i + 1) * 2_000].to_parquet(tmp_path / f"part{i}.parquet")
    ddf = dd.read_parquet(str(tmp_path / "*.parquet"))
    a = fit_dask(ddf, random_state=0)
    b = fit_dask(dd.from_pandas(frame, npartitions=4), random_state=0)
    np.testing.assert_array_equal(
        a.predict_proba(frame["score"], X=frame[FEATURES]), b.predict_proba(frame["score"], X=frame[FEATURES])
    )


def test_reproducible_across_schedulers_and_input_kinds():
    frame, _ = simulate(8_000, 3)
    frame["age"] = frame["age"].round()  # integers: a 2-D Dask array of numbers holds every column
    frame["region"] = frame["region"].map({"north": 0, "south": 1, "east": 2})
    copy = frame.copy()
    ddf = dd.from_pandas(frame, npartitions=3)
    base = fit_dask(ddf, random_state=5, mvce_bins=256, mvce_shuffles=2)
    with dask.config.set(scheduler="threads"):
        threaded = fit_dask(ddf, random_state=5, mvce_bins=256, mvce_shuffles=2)
    chunks = tuple(ddf.map_partitions(len).compute())
    arrays = MBCT(random_state=5, mvce_bins=256, mvce_shuffles=2).fit(
        da.from_array(frame["score"].to_numpy(), chunks=chunks),
        da.from_array(frame["label"].to_numpy(), chunks=chunks),
        X=da.from_array(frame[FEATURES].to_numpy(), chunks=(chunks, 2)),
    )
    p = base.predict_proba(frame["score"], X=frame[FEATURES])
    for other in (threaded, arrays):
        np.testing.assert_array_equal(other.node_factor_, base.node_factor_)
        np.testing.assert_array_equal(other.predict_proba(frame["score"], X=frame[FEATURES]), p)
    assert not np.array_equal(fit_dask(ddf, random_state=6).node_factor_, base.node_factor_)
    pd.testing.assert_frame_equal(frame, copy)


def test_integer_weights_are_split_as_repeated_rows_on_dask():
    """Each partition splits a row of weight 3 as 3 rows (as in memory): the validation sums
    are unit counts, not multiples of 3, and each unit counts once in their variance."""
    frame, _ = simulate(8_000, 4)
    frame["w"] = 3.0
    ddf = dd.from_pandas(frame, npartitions=3)
    fitted = MBCT(random_state=1).fit(ddf["score"], ddf["label"], ddf["w"], X=ddf[FEATURES])
    sums = fitted._partition_sums(frame["score"], frame["label"], frame["w"], frame[FEATURES], fitted.classes_, 0, 0)
    np.testing.assert_array_equal(sums["w2v"], sums["wv"])
    np.testing.assert_array_equal(sums["w2t"], sums["wt"])
    assert np.any(sums["wv"] % 3 != 0)
    assert abs(sums["wv"].sum() / (3 * len(frame)) - fitted.validation_fraction) < 0.01


def test_rows_of_zero_weight_are_absent_on_dask_as_in_memory():
    """A partition of weight-0 rows with a region and ages of their own adds no level, no edge
    and no tree (its region once made a level and its ages moved the sketch's edges)."""
    frame, _ = simulate(8_000, 5)
    frame["w"] = 1.0
    rng = np.random.default_rng(1)
    m = 500
    held_out = pd.DataFrame(
        {
            "score": rng.uniform(0.001, 0.999, m),
            "label": rng.integers(0, 2, m),
            "region": "west",
            "age": rng.uniform(90, 120, m),
            "noise": rng.integers(4, 9, m),
            "w": 0.0,
        }
    )
    ddf = dd.from_pandas(frame, npartitions=3)
    padded = dd.concat([ddf, dd.from_pandas(held_out, npartitions=1)])
    fits = [MBCT(random_state=2).fit(d["score"], d["label"], d["w"], X=d[FEATURES]) for d in (ddf, padded)]
    assert fits[0].feature_kinds_ == fits[1].feature_kinds_
    for name in ("feature_levels_", "feature_edges_"):
        for a, b in zip(getattr(fits[0], name), getattr(fits[1], name), strict=True):
            np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(fits[0].score_edges_, fits[1].score_edges_)
    np.testing.assert_allclose(*(f.predict_proba(frame["score"], X=frame[FEATURES]) for f in fits), rtol=1e-12)


def _bad_frames():
    """(name, frame, weight column or None); the defect sits in the first partition."""
    frame, _ = simulate(600, 6)
    frame["w"] = 1.0
    cases = []
    for name, column, value in (
        ("nan score", "score", np.nan),
        ("score above 1", "score", 1.5),
        ("third label", "label", 2),
        ("negative weight", "w", -1.0),
    ):
        bad = frame.copy()
        bad.loc[3, column] = value
        cases.append((name, bad, "w"))
    cases.append(("one class", frame.assign(label=1), None))
    cases.append(("zero weights", frame.assign(w=0.0), "w"))
    cases.append(("too few", frame.iloc[:1], None))
    bad = frame.copy()
    bad.loc[2, "age"] = np.nan
    cases.append(("missing feature", bad, None))
    return cases


@pytest.mark.parametrize("name, frame, weight", _bad_frames(), ids=[c[0] for c in _bad_frames()])
def test_bad_input_gives_the_numpy_routes_message(name, frame, weight):
    with pytest.raises(ValueError) as numpy_error:
        MBCT().fit(frame["score"], frame["label"], None if weight is None else frame[weight], X=frame[FEATURES])
    ddf = dd.from_pandas(frame, npartitions=min(3, len(frame)))
    with pytest.raises(ValueError) as dask_error:
        MBCT().fit(ddf["score"], ddf["label"], None if weight is None else ddf[weight], X=ddf[FEATURES])
    # the same message; figures in it (index, count, min, max) are those of the partition
    figures = r"-?\d+(\.\d+)?(e[-+]?\d+)?"
    assert re.sub(figures, "#", str(dask_error.value)) == re.sub(figures, "#", str(numpy_error.value))
    assert "\n" not in str(dask_error.value)


def test_labels_are_checked_across_partitions_and_inputs_must_align():
    frame, _ = simulate(600, 7)
    frame["label"] = np.where(np.arange(600) < 300, frame["label"], frame["label"] + 1)  # {0, 1} then {1, 2}
    ddf = dd.from_pandas(frame, npartitions=2)
    with pytest.raises(ValueError, match=r"y has 3 distinct values \(0, 1, 2\)"):
        fit_dask(ddf)
    other = dd.from_pandas(frame, npartitions=3)
    with pytest.raises(ValueError, match="Mismatched partitions: scores has 2, y has 2, X has 3"):
        MBCT().fit(ddf["score"], ddf["label"], X=other[FEATURES])
    s = da.from_array(frame["score"].to_numpy(), chunks=200)
    with pytest.raises(ValueError, match="Mismatched lengths: scores has 600, y has 599"):
        MBCT().fit(s, da.from_array(frame["label"].to_numpy()[:-1]), X=da.zeros((600, 1), chunks=200))
    with pytest.raises(ValueError, match="X is in memory while other inputs are Dask"):
        MBCT().fit(ddf["score"], ddf["label"], X=frame[FEATURES])
    with pytest.raises(ValueError, match="X is None"):
        MBCT().fit(ddf["score"], ddf["label"])
    with pytest.raises(ValueError, match="requires y to be passed"):
        MBCT().fit(ddf["score"], X=ddf[FEATURES])


def test_one_d_calibrators_fit_dask_inputs_through_a_summary():
    frame, _ = simulate(20_000, 8)
    ddf = dd.from_pandas(frame, npartitions=4)
    est = bayescal.make_calibrator("isotonic").fit(ddf["score"], ddf["label"])
    ref = bayescal.make_calibrator("isotonic").fit(ScoreSummary.from_dask(ddf["score"], ddf["label"]))
    grid = np.linspace(0.01, 0.99, 50)
    np.testing.assert_array_equal(est.predict_proba(grid), ref.predict_proba(grid))
    np.testing.assert_array_equal(est.score_range_, ref.score_range_)
    with pytest.raises(ValueError, match="uses scores only, but X was passed"):
        bayescal.make_calibrator("isotonic").fit(ddf["score"], ddf["label"], X=ddf[FEATURES])

    class Unweighted(IsotonicCalibrator):  # every registered calibrator honours weights today
        supports_weights = False

    with pytest.raises(ValueError, match="cannot fit on Dask data: it does not use sample weights.*Compute the data"):
        Unweighted().fit(ddf["score"], ddf["label"])


def test_fit_on_a_process_cluster_matches_the_local_fit():
    frame, _ = simulate(6_000, 9)
    ddf = dd.from_pandas(frame, npartitions=2)
    local = fit_dask(ddf, random_state=2)
    with (
        distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster,
        distributed.Client(cluster),
    ):
        remote = fit_dask(ddf, random_state=2)
    np.testing.assert_array_equal(remote.node_factor_, local.node_factor_)
    np.testing.assert_array_equal(
        remote.predict_proba(frame["score"], X=frame[FEATURES]), local.predict_proba(frame["score"], X=frame[FEATURES])
    )


def test_dask_frame_columns_are_checked_by_name_at_prediction():
    """A fit on a Dask frame records its columns' names as a fit in memory does: the same columns
    in another order are refused at prediction (they moved predictions by up to 0.73 silently), and
    a refit on other columns forgets the former names (it refused the refit's own columns)."""
    rng = np.random.default_rng(1)
    n = 3000
    s = rng.uniform(0.05, 0.95, n)
    X = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n)})
    y = (rng.random(n) < np.clip(s * (1 + 0.5 * np.sign(X["a"])), 0, 1)).astype(int)
    frame = dd.from_pandas(X.assign(s=s, y=y), npartitions=3)
    model = MBCT(random_state=0).fit(frame["s"], frame["y"], X=frame[["a", "b"]])
    np.testing.assert_array_equal(model.feature_names_x_, ["a", "b"])
    with pytest.raises(ValueError, match=re.escape("X has the columns ['b', 'a']")):
        model.predict_proba(s, X=X[["b", "a"]])
    renamed = dd.from_pandas(X.rename(columns={"a": "u", "b": "v"}).assign(s=s, y=y), npartitions=3)
    model.fit(renamed["s"], renamed["y"], X=renamed[["u", "v"]])
    np.testing.assert_array_equal(model.feature_names_x_, ["u", "v"])
    model.predict_proba(s, X=X.rename(columns={"a": "u", "b": "v"}))


def test_sparse_features_are_refused_by_name():
    from scipy import sparse

    s = np.linspace(0.1, 0.9, 40)
    y = np.tile([0, 1], 20)
    with pytest.raises(ValueError, match="X is a sparse matrix"):
        MBCT().fit(s, y, X=sparse.csr_matrix(np.ones((40, 2))))


def test_exact_zero_and_one_scores_do_not_stretch_the_score_bins_on_dask():
    """As in memory: the score bins span the scores strictly inside (0, 1), the exact 0 and 1 (5 %
    of the rows here, in every partition) fall in the end bins; with only exact 0 and 1 the bins
    span their two working-scale values."""
    frame, _ = simulate(20_000, 3)
    rng = np.random.default_rng(3)
    extreme = rng.random(len(frame)) < 0.05
    frame.loc[extreme, "score"] = frame.loc[extreme, "label"].astype(float)
    a = fit_dask(dd.from_pandas(frame, npartitions=4), random_state=0)
    b = MBCT(random_state=0).fit(frame["score"], frame["label"], X=frame[FEATURES])
    np.testing.assert_allclose(a.score_edges_, b.score_edges_, atol=0.02)  # within the sketches' rank error
    inner = frame.loc[~extreme, "score"].to_numpy()
    t = np.log(inner / (1 - inner))
    assert t.min() < a.score_edges_[0] and a.score_edges_[-1] < t.max()
    only = frame.assign(score=frame["label"].astype(float))
    c = fit_dask(dd.from_pandas(only, npartitions=4), random_state=0)
    d = MBCT(random_state=0).fit(only["score"], only["label"], X=only[FEATURES])
    np.testing.assert_array_equal(c.score_edges_, d.score_edges_)
    assert c.score_edges_[0] > -27.7 and c.score_edges_[-1] < 27.7
