"""BBQ: the authors' published numbers, their binning and pruning rules, and the contract."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from _strategies import score_rows
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy.special import betaln, expit, gammaln

from bayescal import metrics
from bayescal.baselines.bbq import BBQ, _binnings, _elbow, _Spread
from bayescal.data import ScoreSummary


def papers_metrics(y, p):
    return {
        "RMSE": metrics.rmse(y, p),
        "AUC": metrics.roc_auc(y, p),
        "ACC": metrics.accuracy(y, p),
        "MCE": metrics.mce(y, p, strategy="papers"),
        "ECE": metrics.ece(y, p, strategy="papers"),
    }


@pytest.fixture(scope="module")
def quadratic_svm(reference_dir):
    d = pd.read_csv(reference_dir / "naeini_quadratic_svm_scores.csv")
    tr, te = d[d.split == "train"], d[d.split == "test"]
    return tr.score.to_numpy(), tr.label.to_numpy(), te.score.to_numpy(), te.label.to_numpy()


def test_reproduces_the_authors_quadratic_svm_output(quadratic_svm):
    s_tr, y_tr, s_te, y_te = quadratic_svm
    p = BBQ().fit(s_tr, y_tr).predict_proba(s_te)[:, 1]
    published = {"RMSE": 0.0716, "AUC": 0.9999, "ACC": 0.9930, "MCE": 0.0491, "ECE": 0.0090}
    got = papers_metrics(y_te, p)
    for key, value in published.items():
        assert got[key] == pytest.approx(value, abs=1e-3), (key, got[key])


def test_linear_svm_on_the_simulated_data(reference_dir):
    from sklearn.svm import SVC

    d = pd.read_csv(reference_dir / "naeini2014_simulated.csv")
    tr, te = d[d.split == "train"], d[d.split == "test"]
    svm = SVC(kernel="linear").fit(tr[["x1", "x2"]].to_numpy(), tr.y.to_numpy())
    s_tr = expit(svm.decision_function(tr[["x1", "x2"]].to_numpy()))
    s_te = expit(svm.decision_function(te[["x1", "x2"]].to_numpy()))
    y_te = te.y.to_numpy()
    uncalibrated = metrics.ece(y_te, s_te, strategy="papers")
    p = BBQ().fit(s_tr, tr.y.to_numpy()).predict_proba(s_te)[:, 1]
    assert uncalibrated == pytest.approx(0.2681, abs=1e-3)
    assert metrics.ece(y_te, p, strategy="papers") <= 0.06  # authors: 0.0438 with their SVM
    assert metrics.roc_auc(y_te, p) >= 0.83  # authors: 0.8585


def matlab_bins(ptr: np.ndarray, b: int) -> list[int]:
    """Bin start indices by a line-by-line transcription of the authors' HistCalibrationFreq loop."""
    n = len(ptr)
    if b == 1:
        return [0]
    c = n // b
    starts, i = [], 1
    idx2 = 0
    while i < b:
        idx1, idx2 = (i - 1) * c + 1, i * c
        j = i + 1
        while j <= b:
            jidx2 = j * c if j < b else n
            if ptr[jidx2 - 1] == ptr[idx1 - 1]:
                idx2, j = jidx2, j + 1
            else:
                break
        starts.append(idx1 - 1)
        i = j
    if idx2 < n:
        starts.append(idx2)
    return starts


@pytest.mark.parametrize("seed", range(5))
def test_chunking_matches_the_authors_loop_with_ties(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(20, 300))
    s = np.sort(np.round(rng.beta(0.5, 0.5, n), int(rng.integers(1, 3))))  # heavy ties
    n_bins = np.arange(1, n // 3)
    model, start, at_start, before_start = _binnings(_Spread(s, s, np.ones(n)), n_bins)  # all binnings at once
    for m, b in enumerate(n_bins):
        assert start[model == m].astype(int).tolist() == matlab_bins(s, int(b)), b
    np.testing.assert_array_equal(at_start, start)  # unit weights: sample i holds position i
    np.testing.assert_array_equal(before_start, np.where(start > 0, start - 1, -1))


def bdeu(nb, mb, pi):
    """One bin's term of the BDeu log marginal likelihood (2 pseudo-counts, prior mean ``pi``)."""
    return (
        gammaln(2.0)
        - gammaln(nb + 2.0)
        + gammaln(mb + 2 * pi)
        - gammaln(2 * pi)
        + gammaln(nb - mb + 2 * (1 - pi))
        - gammaln(2 * (1 - pi))
    )


def authors_bbq(s: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, list, list, list]:
    """A per-binning transcription of the authors' ``build.m`` for unit weights: the candidate
    numbers of bins, and each binning's BDeu log marginal likelihood, edges and bin estimates."""
    order = np.argsort(s, kind="stable")
    s, y = s[order], y[order]
    n = s.size
    b_min = max(1, int(np.floor(n ** (1 / 3) / 10)))
    b_max = min(int(np.ceil(n / 5)), int(np.ceil(10 * n ** (1 / 3))))
    n_bins = np.arange(b_min, max(b_min, b_max) + 1)
    lml, edges, proba = [], [], []
    for b in n_bins:
        starts = matlab_bins(s, int(b))
        stops = starts[1:] + [n]
        e = np.array([0.0] + [(s[a - 1] + s[a]) / 2 for a in starts[1:]] + [1.0])
        total, p_b = 0.0, []
        for k, (i, j) in enumerate(zip(starts, stops)):
            nb, mb = j - i, y[i:j].sum()
            mid = (e[k] + e[k + 1]) / 2
            pi = np.clip(mid, 0.005, 0.995)
            total += bdeu(nb, mb, pi)
            p0 = ((s[i:j] * y[i:j]).sum() + mid) / (mb + 1.0)
            p_b.append((mb + p0) / (nb + 1.0))
        lml.append(total)
        edges.append(e)
        proba.append(np.array(p_b))
    return n_bins, lml, edges, proba


@pytest.mark.parametrize("seed", range(4))
def test_untied_scores_give_the_authors_binnings(seed):
    # without ties, merging tied scores changes nothing: every candidate binning is the authors'
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 400))
    s = rng.random(n)
    y = (rng.random(n) < s).astype(int)
    assert np.unique(s).size == n
    est = BBQ(alpha=0.0).fit(s, y)
    n_bins, lml, edges, proba = authors_bbq(s, y)
    np.testing.assert_array_equal(est.n_bins_, n_bins)
    np.testing.assert_allclose(est.log_marginal_likelihood_, lml, rtol=1e-12)
    for k, e, p in zip(est.kept_, est.bin_edges_, est.bin_proba_):
        np.testing.assert_allclose(e, edges[k], rtol=1e-12)  # BBQ sees expit(logit(s)), not s
        np.testing.assert_allclose(p, proba[k], rtol=1e-12)


def test_a_cut_through_a_tie_shares_its_labels_in_proportion():
    # 10 rows: models of 1 and 2 bins. With 2 bins of 5 the cut falls inside the tie at 0.5
    # (4 rows, 2 positive), so each bin holds part of the tie and half of that part is positive,
    # whichever way the tied rows are ordered (the authors' stable sort gave m = 1 or 2 to the first bin)
    s = np.array([0.1, 0.1, 0.1, 0.1, 0.5, 0.5, 0.5, 0.5, 0.9, 0.9])
    y = np.array([0, 0, 1, 0, 0, 0, 1, 1, 1, 1])
    want = bdeu(5, 1 + 0.5, 0.25) + bdeu(5, 1.5 + 2, 0.75)  # bins [0, 0.5] and [0.5, 1]
    for order in (np.arange(10), np.array([0, 1, 2, 3, 6, 7, 4, 5, 8, 9]), np.argsort(y, kind="stable")):
        est = BBQ().fit(s[order], y[order])
        assert est.n_bins_.tolist() == [1, 2]
        assert est.log_marginal_likelihood_[1] == pytest.approx(want, rel=1e-12)


def test_rows_sorted_by_label_give_the_same_fit():
    # the audit's case: tied scores holding both classes, data frames concatenated by class
    rng = np.random.default_rng(0)
    s = np.round(rng.random(1000), 1)
    y = (rng.random(1000) < s).astype(int)
    grid = np.array([0.3, 0.4, 0.5, 0.6])
    drawn = BBQ().fit(s, y).predict_proba(grid)[:, 1]
    o = np.argsort(y, kind="stable")
    np.testing.assert_array_equal(BBQ().fit(s[o], y[o]).predict_proba(grid)[:, 1], drawn)
    observed = np.array([y[s == g].mean() for g in grid])
    assert np.abs(drawn - observed).max() < 0.1  # negatives first used to give 0.006 at 0.3


@pytest.mark.filterwarnings("ignore:.*within 1e-12 of 0 or 1")
@settings(max_examples=40, deadline=None)
@given(
    score_rows,
    st.lists(st.sampled_from([0.0, 0.3, 1.0, 2.5]) | st.floats(0.01, 5), min_size=80, max_size=80),
    st.randoms(use_true_random=False),
)
def test_fit_does_not_depend_on_the_row_order(rows, weights, random):
    s, y = (np.array(v) for v in zip(*rows))
    w = np.array(weights[: s.size])
    assume(w[y == 1].sum() > 0 and w[y == 0].sum() > 0)
    perm = np.array(random.sample(range(s.size), s.size))
    a = BBQ().fit(s, y, sample_weight=w)
    b = BBQ().fit(s[perm], y[perm], sample_weight=w[perm])
    np.testing.assert_array_equal(a.log_marginal_likelihood_, b.log_marginal_likelihood_)
    np.testing.assert_array_equal(a.kept_, b.kept_)
    for name in ("bin_edges_", "bin_proba_"):
        for u, v in zip(getattr(a, name), getattr(b, name)):
            np.testing.assert_array_equal(u, v)
    grid = np.concatenate([np.linspace(0, 1, 21), s])
    np.testing.assert_array_equal(a.predict_proba(grid), b.predict_proba(grid))


def test_no_binning_has_more_bins_than_distinct_scores():
    # 50 rows of weight 1e12: the total weight (5e13) would ask for 3,684 to 368,403 bins
    rng = np.random.default_rng(0)
    s = rng.random(50)
    y = (rng.random(50) < s).astype(int)
    est = BBQ().fit(s, y, sample_weight=np.full(50, 1e12))
    assert est.n_bins_.tolist() == [50]
    # chunks of exactly one row: each row is its own bin, P_b = (1e12 y + p0) / (1e12 + 1)
    assert [len(p) for p in est.bin_proba_] == [50]
    p = est.predict_proba(s)[:, 1]
    assert np.all((p > 0) & (p < 1))
    np.testing.assert_allclose(p, y, atol=1e-11)
    # heavily tied unit weights: 11 distinct scores, 1000 rows (uncapped: up to 100 bins)
    t = np.round(rng.random(1000), 1)
    assert BBQ().fit(t, (rng.random(1000) < t).astype(int)).n_bins_.tolist() == list(range(1, 12))
    # a summary's bins are spread over their score range: no cap
    u = rng.random(1000)
    summary = ScoreSummary.from_arrays(u, (rng.random(1000) < u).astype(int), n_bins=8)
    assert BBQ().fit(summary).n_bins_[-1] == 100


def test_one_bin_model_is_the_beta_binomial_marginal_likelihood():
    rng = np.random.default_rng(3)
    s = rng.random(40)
    y = (rng.random(40) < s).astype(int)
    est = BBQ().fit(s, y)
    assert est.n_bins_[0] == 1  # floor(40^(1/3) / 10) = 0 -> 1
    m, n = y.sum(), y.size
    # 2 pseudo-counts with prior mean 1/2: Beta(1, 1), so P(D) = B(m + 1, n - m + 1)
    assert est.log_marginal_likelihood_[0] == pytest.approx(betaln(m + 1, n - m + 1), rel=1e-12)
    # and the model space runs up to min(ceil(N/5), ceil(10 N^(1/3)))
    assert est.n_bins_[-1] == 8


def test_bin_estimate_and_prior_by_hand():
    # all scores equal: every binning collapses to one bin over [0, 1]
    s = np.full(12, 0.3)
    y = np.array([1, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0])
    est = BBQ().fit(s, y)
    m, n = y.sum(), y.size
    p0 = (0.3 * m + 0.5) / (m + 1)
    expected = (m + p0) / (n + 1)
    np.testing.assert_allclose(est.predict_proba([0.0, 0.3, 1.0])[:, 1], expected, rtol=1e-12)
    assert all(len(e) == 2 for e in est.bin_edges_)


@pytest.mark.parametrize(
    ("rel", "kept"),
    [
        ([1.0, 0.5, 0.01, 0.0099999], [0, 1]),  # big drops, then a small one: stop there
        ([1.0, 0.99999, 0.2], [0]),  # first drop small: only the best
        ([0.3, 1.0, 1.0, 0.1], [1, 2, 0]),  # tied best models, then big drops to the end
        ([0.7], [0]),  # a single model
        ([0.4, 0.4, 0.4], [0, 1, 2]),  # no variance: every model equally likely
    ],
)
def test_elbow_rule(rel, kept):
    assert _elbow(np.array(rel), 0.001).tolist() == kept


def test_edges_ties_and_zero_width_bins():
    # 8 low scores, 14 tied at 0.5, 8 high: with 3 bins of 10 the middle bin holds only 0.5,
    # so both its edges are 0.5 (zero width) and a score of 0.5 gets that bin
    s = np.concatenate([np.linspace(0.05, 0.3, 8), np.full(14, 0.5), np.linspace(0.7, 0.95, 8)])
    y = np.array([0, 0, 1, 0, 0, 0, 0, 1] + [1, 0] * 7 + [1, 1, 0, 1, 1, 1, 1, 1])
    est = BBQ(alpha=0.0).fit(s, y)  # alpha = 0 keeps the models until the first equal drop
    zero_width = [k for k, e in enumerate(est.bin_edges_) if np.any(np.diff(e) == 0)]
    assert zero_width, "the data should produce a zero-width bin"
    for edges, proba in zip(est.bin_edges_, est.bin_proba_):
        inner = edges[1:-1]
        for x in (0.02, 0.3, 0.5, 0.6, 0.98):
            hits = np.flatnonzero(inner == x)
            if hits.size >= 2:  # zero-width bins [x, x] between equal edges: their mean
                want = proba[hits[0] + 1 : hits[-1] + 1].mean()
            else:  # the bin above an edge the score sits on
                want = proba[np.searchsorted(inner, x, side="right")]
            assert BBQ._bin_predict(np.array([x]), edges, proba)[0] == pytest.approx(want)
    edges, proba = est.bin_edges_[zero_width[0]], est.bin_proba_[zero_width[0]]
    middle = int(np.flatnonzero(np.diff(edges) == 0)[0])
    # the zero-width bin's estimate is (m + p0) / (n + 1) over the scores tied at 0.5 in it
    assert BBQ._bin_predict(np.array([0.5]), edges, proba)[0] == proba[middle]


def test_selection_best_uses_the_highest_marginal_likelihood(quadratic_svm):
    s_tr, y_tr, s_te, _ = quadratic_svm
    best = BBQ(selection="best").fit(s_tr, y_tr)
    assert best.kept_.tolist() == [int(np.argmax(best.log_marginal_likelihood_))]
    avg = BBQ().fit(s_tr, y_tr)
    assert avg.kept_[0] == best.kept_[0] and len(avg.kept_) > 1
    assert not np.allclose(avg.predict_proba(s_te), best.predict_proba(s_te))


def test_integer_weights_equal_repeated_rows():
    rng = np.random.default_rng(1)
    s = np.round(rng.random(300), 2)
    y = (rng.random(300) < s).astype(int)
    w = rng.integers(0, 4, 300)
    weighted = BBQ().fit(s, y, sample_weight=w)
    repeated = BBQ().fit(np.repeat(s, w), np.repeat(y, w))
    grid = np.linspace(0, 1, 101)
    np.testing.assert_allclose(weighted.predict_proba(grid), repeated.predict_proba(grid), atol=1e-12)
    np.testing.assert_allclose(weighted.log_marginal_likelihood_, repeated.log_marginal_likelihood_, rtol=1e-12)


def test_decision_scores_use_their_logistic_transform():
    rng = np.random.default_rng(2)
    d = rng.normal(size=200)
    y = (rng.random(200) < expit(2 * d)).astype(int)
    a = BBQ(score_kind="decision").fit(d, y)
    b = BBQ().fit(expit(d), y)
    np.testing.assert_allclose(a.predict_proba(d), b.predict_proba(expit(d)), atol=1e-12)


def test_decision_scores_that_share_a_probability_are_one_sample():
    """Margins beyond about 37 all have probability 1.0 (and many beyond 20 share one), which is
    what prediction reads: the bins must not cut between them. Cut on the margins, the answer at
    such a score depended on how the labels lay along the margins (0.853 or 1.0 for a tie whose
    positive share is 0.901)."""
    rng = np.random.default_rng(0)
    y = (rng.random(1000) < 0.5).astype(int)
    d = np.where(y == 1, rng.normal(1, 1, 1000), rng.normal(-1, 1, 1000)) * 100
    tie = np.flatnonzero(expit(d) == 1.0)
    tie = tie[np.argsort(d[tie])]
    answers = []
    for positives_high in (False, True):
        arranged = y.copy()
        arranged[tie] = np.sort(y[tie]) if positives_high else np.sort(y[tie])[::-1]
        answers.append(float(BBQ(score_kind="decision").fit(d, arranged).predict_proba([100.0])[0, 1]))
    assert answers[0] == pytest.approx(answers[1], abs=1e-12)
    assert answers[0] == pytest.approx(y[tie].mean(), abs=0.02)


def test_deterministic_bounded_and_inputs_untouched(rng):
    s = rng.random(500)
    y = (rng.random(500) < s**2).astype(int)
    s0, y0 = s.copy(), y.copy()
    a = BBQ().fit(s, y).predict_proba(s)
    b = BBQ().fit(s, y).predict_proba(s)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(s, s0)
    np.testing.assert_array_equal(y, y0)
    assert np.all(np.isfinite(a)) and a.min() > 0 and a.max() < 1
    assert BBQ.monotone is False


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"selection": "mean"}, "selection='mean' must be one of"),
        ({"alpha": -1.0}, "alpha=-1.0 must be a non-negative number"),
        ({"alpha": "0.01"}, "alpha='0.01' must be a non-negative number"),
        ({"alpha": True}, "alpha=True must be a non-negative number"),
        ({"alpha": np.inf}, "alpha=inf must be a non-negative number"),
    ],
)
def test_bad_parameters(params, match):
    with pytest.raises(ValueError, match=match):
        BBQ(**params).fit([0.1, 0.4, 0.6, 0.9], [0, 0, 1, 1])


def test_bad_input_goes_through_the_base():
    with pytest.raises(ValueError, match="scores"):
        BBQ().fit([0.1, np.nan, 0.5], [0, 1, 1])
    with pytest.raises(ValueError, match="class"):
        BBQ().fit([0.1, 0.2, 0.5], [1, 1, 1])
    with pytest.raises(ValueError):
        BBQ().fit([0.1, 1.5, 0.5], [0, 1, 1])


@settings(max_examples=40, deadline=None)
@given(score_rows)
def test_any_valid_data_gives_probabilities(rows):
    s, y = (np.array(v) for v in zip(*rows))
    assume(0 < y.sum() < y.size)
    est = BBQ().fit(s, y)
    grid = np.concatenate([np.linspace(0, 1, 21), s])
    p = est.predict_proba(grid)[:, 1]
    assert np.all(np.isfinite(p)) and p.min() > 0 and p.max() < 1
    # each kept binning covers [0, 1] with one estimate per bin, the best model first
    assert est.kept_[0] == np.argmax(est.log_marginal_likelihood_)
    for edges, proba in zip(est.bin_edges_, est.bin_proba_):
        assert edges[0] == 0 and edges[-1] == 1 and np.all(np.diff(edges) >= 0)
        assert proba.shape[0] == edges.shape[0] - 1


def test_a_total_weight_that_asks_for_too_many_bins_is_refused_by_name():
    """10,000 distinct scores of weight 1e8 ask for 5e7 bins (about 7 GB): refused up front,
    naming sample_weight, instead of a MemoryError from deep inside the fit."""
    rng = np.random.default_rng(0)
    s = rng.random(10_000)
    y = (rng.random(10_000) < s).astype(int)
    with pytest.raises(ValueError, match="sample_weight"):
        BBQ().fit(s, y, np.full(s.size, 1e8))
