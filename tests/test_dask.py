"""Large data through sufficient statistics on a Dask cluster."""

from __future__ import annotations

import warnings

import dask.array as da
import dask.distributed as distributed
import numpy as np
import pytest

import bayescal
from bayescal.data import ScoreSummary

N = 10_000_000
CHUNK = 1_000_000


def simulated_dask(seed: int = 0):
    """Beta(2,5) negatives and Beta(5,2) positives (pi = 0.4), generated chunk by chunk on the workers."""
    rng = da.random.default_rng(seed)
    u = rng.random(N, chunks=CHUNK)
    y = (u < 0.4).astype(np.int8)
    s = da.where(y == 1, rng.beta(5, 2, N, chunks=CHUNK), rng.beta(2, 5, N, chunks=CHUNK))
    return s, y


@pytest.fixture(scope="module")
def cluster_summary():
    with (
        distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster,
        distributed.Client(cluster),
    ):
        s, y = simulated_dask()
        s, y = s.persist(), y.persist()
        summary = ScoreSummary.from_dask(s, y)
        s_np, y_np = s.compute(), y.compute()
    return summary, s_np, y_np


def test_summary_on_a_cluster_counts_every_score(cluster_summary):
    summary, s, y = cluster_summary
    np.testing.assert_allclose(summary.total, [np.sum(y == 0), np.sum(y == 1)])
    local = ScoreSummary.from_arrays(s, y, lo=summary.edges[0], hi=summary.edges[-1])
    np.testing.assert_array_equal(summary.counts, local.counts)


def test_isotonic_on_the_summary_matches_the_raw_fit(cluster_summary):
    summary, s, y = cluster_summary
    q = np.linspace(0.02, 0.98, 97)
    raw = bayescal.make_calibrator("isotonic").fit(s, y).predict_proba(q)[:, 1]
    summ = bayescal.make_calibrator("isotonic").fit(summary).predict_proba(q)[:, 1]
    # every score moves at most half a bin on the working scale: the maps differ by at most
    # the map's change over one bin (about 0.008 here) plus sampling noise of PAV's blocks
    assert np.mean(np.abs(raw - summ)) < 0.005
    assert np.max(np.abs(raw - summ)) < 0.03


def test_dpm_on_the_summary_matches_the_raw_fit(cluster_summary):
    summary, s, y = cluster_summary
    grid = np.quantile(s[:100_000], np.linspace(0.025, 0.975, 41))
    raw = bayescal.make_calibrator("dpm", random_state=0).fit(s, y)
    summ = bayescal.make_calibrator("dpm", random_state=0).fit(summary)
    gap = np.abs(raw.calibration_map(grid).mean(("chain", "draw")) - summ.calibration_map(grid).mean(("chain", "draw")))
    assert float(gap.max()) < 0.005


def test_calibrators_that_cannot_use_weights_say_so(cluster_summary):
    summary, _, _ = cluster_summary
    for name in bayescal.calibrators():
        est = bayescal.make_calibrator(name)
        if not est.supports_weights:
            with pytest.raises(ValueError, match="cannot fit on a ScoreSummary"):
                est.fit(summary)


def test_predict_on_dask_is_lazy_and_matches_numpy():
    s = da.random.default_rng(1).random(200_000, chunks=50_000)
    est = bayescal.make_calibrator("platt").fit(np.r_[0.1, 0.4, 0.35, 0.8, 0.2, 0.9], [0, 0, 1, 1, 0, 1])
    lazy = est.predict_proba(s)
    assert isinstance(lazy, da.Array) and lazy.shape == (200_000, 2)
    np.testing.assert_allclose(lazy.compute(), est.predict_proba(s.compute()))


def test_lazy_dpm_prediction_does_not_carry_the_posterior():
    # each task of the graph holds the calibrator: not its 2,000 map draws on the grid (10 MB),
    # which made a distributed client warn of a large graph at every prediction
    cloudpickle = pytest.importorskip("cloudpickle")
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 600)
    s = rng.beta(2 + 3 * y, 5 - 3 * y)
    s[:20], s[20:40] = 0.0, 1.0  # atoms, whose map the point prediction reads from the draws
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cal = bayescal.make_calibrator("dpm", random_state=0).fit(s, y)
    lazy = cal.predict_proba(da.from_array(s, chunks=100))
    assert len(cloudpickle.dumps(dict(lazy.__dask_graph__()))) < len(cloudpickle.dumps(cal)) / 5
    np.testing.assert_array_equal(lazy.compute(), cal.predict_proba(s))
    assert cal.idata_ is not None  # the fitted calibrator keeps its posterior


def small_data(n: int = 400, seed: int = 1):
    rng = np.random.default_rng(seed)
    t = rng.normal(size=n)
    y = (rng.random(n) < 1 / (1 + np.exp(-2 * t))).astype(int)
    w = rng.integers(0, 4, n).astype(float)
    return t, y, w


@pytest.mark.parametrize("score_kind", ["decision", "probability"])
def test_dask_weights_of_one_column_count_as_in_memory(score_kind):
    t, y, w = small_data()
    s = t if score_kind == "decision" else 1 / (1 + np.exp(-t))
    grid = dict(n_bins=256, lo=-10, hi=10, score_kind=score_kind)
    in_memory = ScoreSummary.from_arrays(s, y, w[:, None], **grid)
    on_dask = ScoreSummary.from_dask(
        da.from_array(s, chunks=100), da.from_array(y, chunks=100), da.from_array(w[:, None], chunks=100), **grid
    )
    np.testing.assert_array_equal(on_dask.counts, in_memory.counts)
    np.testing.assert_array_equal(on_dask.atom_counts, in_memory.atom_counts)


def in_memory_message(**inputs) -> str:
    with pytest.raises(ValueError) as info:
        ScoreSummary.from_arrays(**inputs)
    return str(info.value)


@pytest.mark.parametrize(
    "bad",
    ["two weight columns", "complex weights", "scalar scores", "scalar labels", "two label columns"],
)
def test_dask_inputs_of_the_wrong_shape_or_kind_are_refused_as_in_memory(bad):
    t, y, w = small_data()
    inputs = {"scores": t, "y": y, "sample_weight": w}
    if bad == "two weight columns":
        inputs["sample_weight"] = np.c_[w, w]
    elif bad == "complex weights":
        inputs["sample_weight"] = w + 1j
    elif bad == "scalar scores":
        inputs["scores"] = np.float64(0.3)
    elif bad == "scalar labels":
        inputs["y"] = np.int64(1)
    else:
        inputs["y"] = np.c_[y, y]
    expected = in_memory_message(**inputs, score_kind="decision")
    lazy = {k: da.from_array(v, chunks=100) for k, v in inputs.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no numpy warning about a dropped imaginary part
        with pytest.raises(ValueError) as info:
            ScoreSummary.from_dask(**lazy, score_kind="decision")
    assert str(info.value) == expected


def test_dask_rows_of_weight_zero_shape_no_summary():
    """As in memory: rows of weight 0 set neither the range nor the layout, nor does a chunk's
    sketch of every other row of 200,000 miss the rows kept when every other row is held out."""
    t, y, _ = small_data(20_000, seed=0)
    scores, labels, weights = np.r_[t, 1e12], np.r_[y, 1], np.r_[np.ones(t.size), 0.0]
    lazy = [da.from_array(v, chunks=5_000) for v in (scores, labels, weights)]
    without = ScoreSummary.from_arrays(t, y, score_kind="decision")
    on_dask = ScoreSummary.from_dask(*lazy, score_kind="decision")
    np.testing.assert_array_equal(on_dask.edges, without.edges)
    np.testing.assert_array_equal(on_dask.counts, without.counts)
    given = ScoreSummary.from_dask(*lazy, score_kind="decision", lo=-10, hi=10)
    np.testing.assert_array_equal(
        given.counts, ScoreSummary.from_arrays(t, y, score_kind="decision", lo=-10, hi=10).counts
    )

    n = 200_000
    rng = np.random.default_rng(0)
    t = rng.standard_t(1.5, n)
    y = (rng.random(n) < 1 / (1 + np.exp(-np.clip(t, -30, 30)))).astype(int)
    w = np.tile([0.0, 1.0], n // 2)
    on_dask = ScoreSummary.from_dask(*(da.from_array(v, chunks=n) for v in (t, y, w)), score_kind="decision")
    kept = ScoreSummary.from_arrays(t[w > 0], y[w > 0], score_kind="decision")
    assert on_dask.bins_across_middle_half() == pytest.approx(kept.bins_across_middle_half(), rel=0.05)


def test_summaries_of_chunks_and_of_shards_in_memory_add_on_one_grid():
    t, y, _ = small_data(4_000)
    grid = dict(n_bins=128, lo=-6, hi=6, score_kind="decision")
    on_dask = ScoreSummary.from_dask(da.from_array(t[:3_000], chunks=700), da.from_array(y[:3_000], chunks=700), **grid)
    merged = on_dask + ScoreSummary.from_arrays(t[3_000:], y[3_000:], **grid)
    np.testing.assert_array_equal(merged.counts, ScoreSummary.from_arrays(t, y, **grid).counts)


def test_chunks_give_the_labels_and_messages_of_the_data_in_memory():
    """An empty partition does not turn integer or boolean labels into floats; labels mixing
    numbers and text get the in-memory message, not numpy's TypeError; a summary is a copy of the
    arrays it is built from and compares equal to its pickled copy."""
    import pickle

    import dask.dataframe as dd
    import pandas as pd

    rng = np.random.default_rng(0)
    s = rng.random(400)
    y = rng.random(400) < s
    for labels in (y, y.astype(np.int64)):
        frame = dd.from_pandas(pd.DataFrame({"s": s, "y": labels}), npartitions=4)
        emptied = frame.map_partitions(lambda p: p.iloc[:0] if len(p) and p.index[0] == 0 else p)
        cal = bayescal.PlattScaling().fit(emptied["s"], emptied["y"])
        assert cal.classes_.dtype == labels.dtype and cal.predict(s).dtype == labels.dtype
    mixed = y.astype(int).astype(object)
    mixed[300:] = np.where(y[300:], "b", "a")
    for chunks in (100, 350):
        with pytest.raises(ValueError, match="y mixes value types that cannot be compared"):
            ScoreSummary.from_dask(da.from_array(s, chunks=chunks), da.from_array(mixed, chunks=chunks))
    counts = np.ones((2, 16))
    summary = ScoreSummary(np.linspace(-1, 1, 17), counts, np.empty(0), np.zeros((2, 0)), "decision")
    counts[0, 0] = -5.0
    assert summary.counts[0, 0] == 1.0
    assert summary == pickle.loads(pickle.dumps(summary)) and summary != summary + summary
