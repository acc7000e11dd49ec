r"""Data preparation for the DPM: atoms, ties and compression.

The first step of :class:`~bayescal.bayesian.dpm.DPMCalibrator`'s pipeline turns validated
:class:`~bayescal.data.ScoreData` into what the inference routes fit: for each class the
continuous working-scale points and their weights, and apart from them the atoms.

**Atoms.** A working-scale value is an atom when it is an end of the clipped logit scale
(probabilities 0 or 1, or within :data:`~bayescal.data.PROB_EPS` of them, as naive Bayes
and trees give), or when it occurs in at least ``atom_min_count`` rows of one class holding
at least ``atom_threshold`` of that class's weight *and* stands out from its neighbours:
its count is improbable (Poisson upper tail below :data:`ATOM_P_VALUE`) for the mean count
of that class at the two nearest distinct values on each side (:func:`spikes`). So a lone
repeated score among continuous ones is an atom, while the values of a lattice
(random-forest vote shares, rounded scores), which repeat about as often as their
neighbours, are not.

**Ties.** The remaining ties are a rounded continuous score: each tied value's rows are
spread evenly over its rounding cell (:func:`~bayescal.data.spread_ties`; for binned data
:func:`~bayescal.data.spread_counts`), which approximates the likelihood of a rounded
value, the density's integral over its cell. Probability scores are rounded as
probabilities (vote shares, rounded outputs), so their cells are cut on that scale.

**Weights.** Sample weights are frequency weights: rows of weight 0 are dropped, and while
the rows are fitted one by one (at most ``compress_above`` of them after the split), a row
of weight :math:`w \ge 2` is first split into :math:`\lfloor w \rfloor` rows of weight
:math:`w / \lfloor w \rfloor` (:func:`frequency_rows`), so a row of integer weight k is
fitted exactly as k repeated rows are: its copies count towards the atom rule and are tied
rows spread over their cell. Compressed data sum the weights in the bins as they sum
repeated rows; there the atom rule counts rows as given and the bins' centre and scale are
those of the rows.

**Compression.** With more than ``compress_above`` continuous scores (a row of weight
:math:`w \ge 2` counting :math:`\lfloor w \rfloor` times) they become per-class
counts on ``n_bins`` bins (:func:`~bayescal.data.asinh_bins`), so the cost of inference no
longer grows with N. The bins are equal-width on an asinh scale centred at the scores' median:
nearly equal-width on the working scale over the bulk of the data, logarithmically wider
beyond, so that a few outlying decision values do not leave the bulk of the data in a handful
of bins; where far outlying scores would still leave the data region (between the scores' 2.5 %
and 97.5 % quantiles) a bin wider than the interquartile range over
:data:`~bayescal.data.ASINH_BINS_PER_IQR`, the scale narrows and the bins are doubled (up to four times)
until none is (:func:`~bayescal.data.asinh_bins`). A fit on a
:class:`~bayescal.data.ScoreSummary` keeps its bins (equal-width, or on the same kind of asinh
scale when far outlying scores stretched its range).

**Points beyond the sampler's range.** A class's continuous points more than
:data:`FAR_SPREADS` robust spreads (interquartile range / 1.349) from its median are moved to
that distance, with a warning (:func:`pull_in_far_points`). The sampler keeps each component's
sums of the points and of their squares, whose rounding error grows as the square of the
points' magnitude: a point :math:`10^{12}` spreads away (a glitch of a scoring pipeline) left
the bulk's component spreads a hundred times too wide and the map flat at the base rate. At
:math:`10^{9}` spreads the point keeps a component of its own far from the bulk, beyond which the
map is held, so moving it there changes what the data say about the bulk not at all.
Decision values whose robust spread is below :data:`TINY_SPREAD` fall under the sampler's
absolute floors (from about 1e-25 the map comes out flat); a warning says to rescale them.

**Classes without a continuous part.** A class whose continuous scores take fewer than two
distinct values (every score an atom, say) carries no information on the shape of its
continuous density. Its mixture is then fitted to the pooled continuous points of both
classes, down-weighted to the class's own continuous weight (at least one row). With so
little weight the posterior of that density stays close to its KDE-informed prior: centred
where the pooled scores are, but wider than they are (the prior's bandwidth is that of the
class's own few rows), so the map away from the atoms is low where the other class's scores
are dense and rises, with a wide band, towards the ends where they are sparse: there
nothing is known about the class's continuous density. When the pooled points have fewer
than two distinct values too, a unit-weight pair of points one unit on either side of them
stands in.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import xarray as xr

from bayescal.data import (
    ASINH_BINS_PER_IQR,
    WORKING_ENDS,
    ScoreData,
    asinh_bins,
    class_bin_counts,
    from_working,
    spread_counts,
    spread_ties,
    to_working,
)

__all__ = [
    "ATOM_P_VALUE",
    "PreparedData",
    "find_atoms",
    "frequency_rows",
    "prepare",
    "pull_in_far_points",
    "spikes",
]

FAR_SPREADS = 1e9
"""Continuous points farther than this many robust spreads from their class's median are moved to
that distance (:func:`pull_in_far_points`). The simulated truths of the coverage study reach
about 1e8 (Cauchy glitches at 10^6 scores), and fits degrade from about 1e10."""

TINY_SPREAD = 1e-18
"""A class's continuous points of a smaller robust spread get a warning to rescale them
(:func:`pull_in_far_points`): the map of decision values scaled by 1e-20 is still that of the
unscaled ones, by 1e-30 flat."""

ATOM_P_VALUE = 1e-3
"""A heavy repeated score is an atom when its count is this improbable for the density of its
neighbouring values (:func:`spikes`)."""


@dataclass(frozen=True)
class PreparedData:
    """What the inference routes fit, and what the posterior records of the data.

    Attributes
    ----------
    xs, cs : list of two ndarrays
        Per class, the continuous working-scale points (raw scores with ties spread, or bin
        centres) and their weights.
    atoms_t : ndarray of shape (A,)
        Atom values on the working scale, sorted.
    atoms : ndarray of shape (A,)
        The same on the input scale (exact 0 and 1 for the clipped ends of probabilities).
    atom_counts : ndarray of shape (2, A)
        Each class's weight at each atom.
    totals : ndarray of shape (2,)
        Each class's total weight.
    observed : xarray.Dataset
        The ``observed_data`` group: raw ``scores``, ``t``, ``y``, ``weight`` by ``obs_id``,
        or ``counts`` (class, bin) and ``atom_counts`` (class, atom) when compressed.
    n_bins : int
        Bins of the compression (0 when the rows are fitted as they are).
    borrowed : tuple of bool
        Whether each class's continuous points are the pooled ones (module docstring).
    scale_floor : float
        The smallest spread a mixture component may have on the working scale: the narrowest
        distance between adjacent bin centres when compressed (binned counts carry no
        information about structure narrower than a bin, and without a floor the likelihood
        of counts at bin centres grows without bound as a component narrows onto one), 0 for
        raw scores.
    """

    xs: list
    cs: list
    atoms_t: np.ndarray
    atoms: np.ndarray
    atom_counts: np.ndarray
    totals: np.ndarray
    observed: xr.Dataset
    n_bins: int
    borrowed: tuple
    scale_floor: float = 0.0

    @property
    def compressed(self) -> bool:
        return self.n_bins > 0


def _end_atoms(data: ScoreData) -> list[float]:
    """The clipped ends of the logit scale where exact (or underflowed) 0 and 1 pile up."""
    if data.score_kind != "probability":
        return []
    return [a for a in WORKING_ENDS if np.any(data.t == a)]


def find_atoms(data: ScoreData, atom_threshold: float, atom_min_count: int) -> np.ndarray:
    """Atom values on the working scale, sorted (ties are judged after clipping to the working scale)."""
    atoms = set(_end_atoms(data))
    # an atom's bin on a 1024-bin grid holds at least its rows: only such bins need np.unique
    lo, hi = float(data.t.min()), float(data.t.max())
    width = (hi - lo) / 1024 if hi > lo else np.inf
    rows, weight = class_bin_counts(data, lo, width, 1024)
    totals = weight.sum(axis=1)
    heavy = (rows >= atom_min_count) & (weight >= atom_threshold * totals[:, None])
    if not heavy.any():
        return np.array(sorted(atoms), dtype=np.float64)
    cell = np.minimum(((data.t - lo) / width).astype(np.int64), 1023)
    cand = np.flatnonzero(heavy[data.y, cell])
    heavy_values = []
    for c in (0, 1):
        sub = cand[data.y[cand] == c]
        vals, inv, cnt = np.unique(data.t[sub], return_inverse=True, return_counts=True)
        share = np.bincount(inv, weights=data.w[sub], minlength=vals.size) / max(totals[c], 1e-300)
        ok = (cnt >= atom_min_count) & (share >= atom_threshold)
        heavy_values += [(c, v, n) for v, n in zip(vals[ok], cnt[ok]) if v not in atoms]
    if heavy_values:
        atoms.update(spikes(data, heavy_values, sorted(atoms)))
    return np.array(sorted(atoms), dtype=np.float64)


def spikes(data: ScoreData, heavy_values: list, ends: list) -> list[float]:
    r"""The heavy values that stand out from their neighbours: point masses, not a lattice.

    Value :math:`a` with :math:`m` rows of class c is an atom when :math:`P(N \ge m) <`
    :data:`ATOM_P_VALUE` for :math:`N \sim \mathrm{Poisson}(\lambda)`, :math:`\lambda` the
    mean number of class-c rows at the (up to) two nearest distinct values on each side: a
    lone repeated value among distinct scores has :math:`\lambda \le 1`, a lattice value has
    neighbours about as heavy as itself.
    """
    from scipy.special import pdtrc

    inner = ~np.isin(data.t, ends) if ends else np.ones(data.n, dtype=bool)
    pooled = np.sort(data.t[inner])  # sorted, not unique: np.unique is 10x slower at 10^7 rows
    per_class = [np.sort(data.t[inner & (data.y == c)]) for c in (0, 1)]
    out = []
    for c, a, m in heavy_values:
        near, lo, hi = [], a, a
        for _ in range(2):  # the two nearest distinct values on each side
            i, j = int(np.searchsorted(pooled, lo)), int(np.searchsorted(pooled, hi, side="right"))
            if i > 0:
                lo = pooled[i - 1]
                near.append(lo)
            if j < pooled.size:
                hi = pooled[j]
                near.append(hi)
        near = np.asarray(near)
        rows = np.searchsorted(per_class[c], near, side="right") - np.searchsorted(per_class[c], near)
        lam = float(rows.mean()) if rows.size else 0.0
        if pdtrc(m - 1, lam) < ATOM_P_VALUE:
            out.append(float(a))
    return out


def _input_atoms(data: ScoreData, atoms_t: np.ndarray) -> np.ndarray:
    """Atom values on the input scale: the score of a row at each atom, so that the working scale
    gives the atom back exactly (the inverse transform of the atom can miss it by a few units of
    rounding, and a score at the atom would then not be matched to it); the clipped ends of
    probabilities stand for exact 0 and 1."""
    atoms = np.array([data.scores[np.flatnonzero(data.t == a)[0]] for a in atoms_t], dtype=np.float64)
    if data.score_kind == "probability":
        atoms[atoms_t == WORKING_ENDS[0]] = 0.0
        atoms[atoms_t == WORKING_ENDS[1]] = 1.0
    return atoms


def _fill_shapeless(xs: list, cs: list) -> tuple[list, list, tuple]:
    """Give a class with fewer than two distinct continuous points the pooled points (module docstring)."""

    def shapeless(x):
        return x.size == 0 or x.min() == x.max()

    borrowed = tuple(shapeless(x) for x in xs)
    if not any(borrowed):
        return xs, cs, borrowed
    px, pc = np.concatenate(xs), np.concatenate(cs)
    if shapeless(px):
        centre = float(px[0]) if px.size else 0.0
        px, pc = np.array([centre - 1.0, centre + 1.0]), np.ones(2)
    xs, cs = list(xs), list(cs)
    for c in (0, 1):
        if borrowed[c]:
            own = max(float(cs[c].sum()), 1.0)
            xs[c], cs[c] = px.copy(), pc * (own / pc.sum())
    return xs, cs, borrowed


def _copies(w: np.ndarray) -> np.ndarray:
    r"""How many rows :func:`frequency_rows` makes of each row with weight ``w``: 0 for weight 0,
    else :math:`\max(1, \lfloor w \rfloor)`."""
    return np.where(w > 0, np.maximum(np.floor(w), 1.0), 0.0).astype(np.int64)


def _one_copy_each(w: np.ndarray, split: bool = True) -> bool:
    """Whether every row stays one row in :func:`frequency_rows` (weights in (0, 2), or just
    positive without ``split``): two passes over ``w`` instead of :func:`_copies`' several."""
    return w.size == 0 or (float(w.min()) > 0 and (not split or float(w.max()) < 2.0))


def _n_copies(w: np.ndarray) -> int:
    """Total rows :func:`frequency_rows` makes of rows with weights ``w``."""
    return int(w.size) if _one_copy_each(w) else int(_copies(w).sum())


def frequency_rows(data: ScoreData, split: bool = True) -> ScoreData:
    r"""The rows that frequency weights stand for: rows of weight 0 dropped and, with ``split``,
    rows of weight :math:`w \ge 2` split into :math:`\lfloor w \rfloor` equal rows.

    With ``split`` each row of positive weight becomes :math:`m = \max(1, \lfloor w \rfloor)`
    copies of weight :math:`w / m`, so the total weight of every score and class is unchanged,
    a row of integer weight k becomes k rows of weight 1 (tied rows, which
    :func:`~bayescal.data.spread_ties` spreads over their rounding cell as it does k repeated
    rows), and rows of weight below 2 stay.

    Parameters
    ----------
    data : ScoreData
        Validated rows.
    split : bool, default True
        Whether rows of weight 2 or more are split.

    Returns
    -------
    ScoreData
        ``data`` itself when no row is dropped or split, else a new one (``data`` is not
        modified).
    """
    if _one_copy_each(data.w, split):
        return data
    copies = _copies(data.w) if split else (data.w > 0).astype(np.int64)
    rows = np.repeat(np.arange(data.n), copies)
    return data.take(rows, (data.w / np.maximum(copies, 1))[rows])


def _in_canonical_order(data: ScoreData) -> ScoreData:
    """The rows sorted by label, working-scale score and weight: permuted rows, and a row of
    weight k split into k rows against k repeated rows, give the same points in the same order
    (so tied rows of unequal weight take the same places in their rounding cell)."""
    order = np.lexsort((data.w, data.t, data.y))
    return data if np.all(order[1:] > order[:-1]) else data.take(order)


def _spread_on_input_scale(sub: ScoreData) -> np.ndarray:
    """Tied scores spread over their rounding cells on the scale where they were rounded (the
    probability, for probability scores, whose end cells stay inside (0, 1)), then taken to the
    working scale."""
    if sub.score_kind != "probability":
        return spread_ties(sub.t, sub.y, sub.w)
    p = from_working(sub.t, "probability")
    return to_working(spread_ties(p, sub.y, sub.w, bounds=(0.0, 1.0)), "probability")


def pull_in_far_points(xs: list[np.ndarray], cs: list[np.ndarray]) -> list[np.ndarray]:
    """Each class's continuous points ``xs[c]`` (weights ``cs[c]``) with those farther than
    :data:`FAR_SPREADS` robust spreads (interquartile range / 1.349, of the weighted points)
    from its weighted median moved to that distance; a warning says how many and how far the
    farthest was. Unchanged (the same arrays) when none is that far, or the spread is 0. A spread
    below :data:`TINY_SPREAD` gets a warning to rescale the scores."""
    from bayescal._stats import weighted_quantile
    from bayescal._warnings import warn

    out = []
    for c, (x, w) in enumerate(zip(xs, cs)):
        if x.size < 4:
            out.append(x)
            continue
        q1, m, q3 = weighted_quantile(x, np.array([0.25, 0.5, 0.75]), w)
        spread = (q3 - q1) / 1.349
        if 0 < spread < TINY_SPREAD:
            warn(
                f"The continuous working-scale scores of class {c} have a robust spread of {spread:.3g}, below "
                f"{TINY_SPREAD:g}, where the DPM's sampler cannot resolve them (its map comes out flat): multiply "
                "the decision values by a constant, the same at fit and at prediction (e.g. 1 / their spread)."
            )
        bound = FAR_SPREADS * spread
        far = np.abs(x - m) > bound
        if not bound > 0 or not far.any():
            out.append(x)
            continue
        farthest = float(x[far][np.argmax(np.abs(x[far] - m))])
        warn(
            f"{int(far.sum())} continuous working-scale score(s) of class {c} lie more than {FAR_SPREADS:.0e} "
            f"robust spreads from the class's median (the farthest at {farthest:.6g}, the spread "
            f"{bound / FAR_SPREADS:.3g}): the DPM fits them at that distance, since its sampler's arithmetic "
            "does not hold both scales, and holds the map beyond it. Such scores are usually glitches of the "
            "scoring pipeline: check them."
        )
        out.append(np.clip(x, m - bound, m + bound))
    return out


def prepare(
    data: ScoreData, *, atom_threshold: float, atom_min_count: int, compress_above: int, n_bins: int
) -> PreparedData:
    r"""Split ``data`` into atoms and per-class continuous points (module docstring).

    Parameters
    ----------
    data : ScoreData
        Validated rows, or the rows of a :class:`~bayescal.data.ScoreSummary` (``bin_edges`` set).
    atom_threshold, atom_min_count : float, int
        The atom rule's share of a class's weight and its fewest rows.
    compress_above : int
        Compress the continuous scores into bins when there are more than this many (a row of
        weight :math:`w \ge 2` counting :math:`\lfloor w \rfloor` times).
    n_bins : int
        Bins of that compression.

    Returns
    -------
    PreparedData
    """
    given = data  # observed_data keeps the rows as given
    if data.bin_edges is None:
        data = frequency_rows(data, split=_n_copies(data.w) <= int(compress_above))
    atoms_t = find_atoms(data, atom_threshold, atom_min_count)
    atoms = _input_atoms(data, atoms_t)
    totals = np.bincount(data.y, weights=data.w, minlength=2)  # y is int8: no 8-byte copy of the labels
    if atoms_t.size:
        is_atom = np.isin(data.t, atoms_t)
        atom_counts = np.array([[data.w[(data.t == a) & (data.y == c)].sum() for a in atoms_t] for c in (0, 1)])
        sub = data.take(~is_atom)
    else:  # no atoms: every row is continuous (no copies)
        atom_counts, sub = np.zeros((2, 0)), data
    if (data.bin_edges is not None or _n_copies(sub.w) > int(compress_above)) and sub.n > 0:
        edges = data.bin_edges
        if edges is None:
            counts, centres = asinh_bins(sub, int(n_bins), bins_per_iqr=ASINH_BINS_PER_IQR)
        else:  # a ScoreSummary's rows, its bins' centres, go back to its bins
            counts = np.stack([np.histogram(sub.t[sub.y == c], edges, weights=sub.w[sub.y == c])[0] for c in (0, 1)])
            centres = 0.5 * (edges[1:] + edges[:-1])
        spread = spread_counts(counts)
        xs = [centres[spread[c] > 0] for c in (0, 1)]
        cs = [spread[c][spread[c] > 0] for c in (0, 1)]
        observed = xr.Dataset(
            {"counts": (("class", "bin"), counts), "atom_counts": (("class", "atom"), atom_counts)},
            coords={"class": [0, 1], "bin": centres, "atom": atoms},
        )
        used_bins = counts.shape[1]
        scale_floor = float(np.min(np.diff(centres))) if centres.size > 1 else 0.0
    else:  # in one order whatever the rows' order, so the posterior depends on the data and the seed alone
        sub = _in_canonical_order(sub)
        t_spread = _spread_on_input_scale(sub) if sub.n else sub.t
        xs = [t_spread[sub.y == c] for c in (0, 1)]
        cs = [sub.w[sub.y == c] for c in (0, 1)]
        observed = xr.Dataset(
            {
                "scores": ("obs_id", given.scores),
                "t": ("obs_id", given.t),
                "y": ("obs_id", given.y),
                "weight": ("obs_id", given.w),
            },
            coords={"obs_id": np.arange(given.n)},
        )
        used_bins = 0
        scale_floor = 0.0
    xs = pull_in_far_points(xs, cs)
    xs, cs, borrowed = _fill_shapeless(xs, cs)
    return PreparedData(
        xs=xs,
        cs=cs,
        atoms_t=atoms_t,
        atoms=atoms,
        atom_counts=atom_counts,
        totals=totals,
        observed=observed,
        n_bins=used_bins,
        borrowed=borrowed,
        scale_floor=scale_floor,
    )
