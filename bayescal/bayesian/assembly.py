r"""Posterior assembly: the two classes' mixture draws, the class prior and the atom masses.

The second-to-last step of :class:`~bayescal.bayesian.dpm.DPMCalibrator`'s pipeline. The
routes return each class's mixture draws (:class:`~bayescal.bayesian.class_fit.ClassFit`);
this module stacks them along ``class`` and adds the parameters with closed-form posteriors:

* the class prior :math:`\pi \sim \mathrm{Beta}(1 + n_1, 1 + n_0)`, :math:`n_c` the class's
  total weight;
* the atom masses. Within class c the masses of the :math:`A` atoms and of the continuous
  part are :math:`(q_{c1}, \dots, q_{cA}, 1 - Q_c) \sim \mathrm{Dirichlet}(\kappa r_{c1} +
  m_{c1}, \dots, \kappa r_{cA} + m_{cA}, 1 + n_c^{\mathrm{cont}})`, :math:`m_{ca}` the class's
  weight at atom a. The prior pseudo-counts tie each atom to the continuous map: one prior
  row (:math:`\kappa` = :data:`ATOM_PRIOR_ROWS`) is split between the classes as the
  continuous part predicts at the atom, :math:`r_{1a} = \bar m(a)`, :math:`r_{0a} = 1 -
  \bar m(a)`, with :math:`\bar m(a) = \pi f_1 / (\pi f_1 + (1 - \pi) f_0)` of the same draw
  evaluated at the atom's value clamped to the range of the continuous points (an end atom
  such as an exact 0 takes the map at the lowest continuous score). Since
  :math:`\pi \approx n_1 / n`, the map at an atom is then about
  :math:`(\kappa \bar m(a) + m_{1a}) / (\kappa + m_{0a} + m_{1a})`: a Beta-binomial update of
  the continuous map by the atom's own labels, so a few rows at a classifier's most
  confident score are not pulled towards :math:`\pi` (which a uniform prior,
  :math:`\kappa r_{ca} = 1`, did: about 1/4 at an atom with two negatives and no positive,
  whatever the classes' sizes).

When more than one component family is fitted, :func:`combine_families` merges their
posteriors into one: each (chain, draw) position holds the draw of one family, chosen by
:func:`slot_models` in proportion to the models' averaging weights
(:mod:`bayescal.bayesian.averaging`).
"""

from __future__ import annotations

import json

import numpy as np
import xarray as xr

from bayescal.bayesian import mixture
from bayescal.bayesian.class_fit import ClassFit
from bayescal.bayesian.preparation import PreparedData

__all__ = ["ATOM_PRIOR_ROWS", "assemble_posterior", "combine_families", "flat_draws", "slot_models"]

ATOM_PRIOR_ROWS = 1.0
"""Prior rows (kappa) at each atom, split between the classes by the continuous map."""
_TINY = 1e-300


def flat_draws(post: xr.Dataset, name: str) -> np.ndarray:
    """Posterior variable ``name`` with (chain, draw) flattened into one leading axis of S draws."""
    v = post[name].values
    return v.reshape(v.shape[0] * v.shape[1], *v.shape[2:])


def _atom_masses(
    prep: PreparedData, pi: np.ndarray, post: xr.Dataset, rng: np.random.Generator, family: str
) -> np.ndarray:
    """Atom masses (chain, draw, class, atom) from their Dirichlet posteriors (module docstring)."""
    n_chain, n_draw = pi.shape
    A = prep.atoms_t.size
    if A == 0:
        return np.empty((n_chain, n_draw, 2, 0))
    pooled = np.concatenate(prep.xs)
    where = np.clip(prep.atoms_t, pooled.min(), pooled.max())
    p1, p2 = (flat_draws(post, name) for name in mixture.PARAMS[family])
    logf = mixture.log_density(where, flat_draws(post, "weight"), p1, p2, family)  # (S, 2, A)
    p = pi.reshape(-1)[:, None]
    log_odds = np.log(p) - np.log1p(-p) + logf[:, 1] - logf[:, 0]
    m_bar = 1.0 / (1.0 + np.exp(-np.clip(log_odds, -700, 700)))  # (S, A)
    n_cont = prep.totals - prep.atom_counts.sum(axis=1)
    out = np.empty((n_chain * n_draw, 2, A))
    for c in (0, 1):
        share = m_bar if c == 1 else 1.0 - m_bar
        conc = np.concatenate(
            [ATOM_PRIOR_ROWS * share + prep.atom_counts[c], np.full((share.shape[0], 1), 1.0 + n_cont[c])], axis=1
        )
        g = rng.gamma(np.maximum(conc, _TINY))
        out[:, c] = np.maximum(g[:, :A] / g.sum(axis=1, keepdims=True), _TINY)
    return out.reshape(n_chain, n_draw, 2, A)


def assemble_posterior(
    fits: list[ClassFit], prep: PreparedData, rng: np.random.Generator, attrs: dict, family: str = "gaussian"
) -> xr.DataTree:
    """The fitted posterior as an ``xarray.DataTree``.

    Parameters
    ----------
    fits : list of two ClassFit
        Each class's mixture draws (same chains and draws).
    prep : PreparedData
        The prepared data (atoms, totals, observed data).
    rng : numpy.random.Generator
        Draws the class prior and the atom masses.
    attrs : dict
        Configuration for the root attrs (JSON-able values).
    family : {"gaussian", "beta"}, default "gaussian"
        The mixtures' component family (:data:`bayescal.bayesian.mixture.PARAMS` names its variables).

    Returns
    -------
    xarray.DataTree
        ``posterior`` with ``pi`` (chain, draw); ``weight`` and the family's two parameters
        (chain, draw, class, component); ``alpha`` (chain, draw, class); ``atom_prob`` (chain,
        draw, class, atom) with coordinate ``atom`` on the input scale, when there are atoms;
        ``observed_data``; and ``sample_stats`` (the routes' statistics when every route gave
        them, with a ``class`` dimension).
    """
    post = xr.concat(
        [f.posterior[["weight", *mixture.PARAMS[family], "alpha"]] for f in fits],
        dim="class",
        coords="minimal",
        compat="override",
        join="exact",
    )
    post = post.assign_coords({"class": [0, 1]}).transpose("chain", "draw", "class", ...)
    shape = (post.sizes["chain"], post.sizes["draw"])
    pi = rng.beta(1.0 + prep.totals[1], 1.0 + prep.totals[0], size=shape)
    post["pi"] = (("chain", "draw"), pi)
    if prep.atoms.size:  # no empty ``atom`` dimension for ArviZ's summaries to trip on
        post["atom_prob"] = (("chain", "draw", "class", "atom"), _atom_masses(prep, pi, post, rng, family))
        post = post.assign_coords(atom=prep.atoms)
    groups = {"posterior": post, "observed_data": prep.observed}
    if all(f.sample_stats is not None for f in fits):
        stats = xr.concat(
            [f.sample_stats for f in fits], dim="class", coords="minimal", compat="override", join="outer"
        )
        groups["sample_stats"] = stats.assign_coords({"class": [0, 1]}).transpose("chain", "draw", ...)
    else:
        groups["sample_stats"] = xr.Dataset(coords={"chain": post["chain"].values, "draw": post["draw"].values})
    tree = xr.DataTree.from_dict(groups)
    tree.attrs.update({k: (json.dumps(v) if isinstance(v, (dict, list)) else v) for k, v in attrs.items()})
    return tree


def slot_models(weights: dict[str, float], n_slots: int, rng: np.random.Generator) -> np.ndarray:
    """Which model each of ``n_slots`` posterior positions takes: ``round(w_m * n_slots)`` positions
    per model (largest remainders, so they sum to ``n_slots``), at random positions.

    Parameters
    ----------
    weights : dict of str to float
        Averaging weight per model (summing to one).
    n_slots : int
        Posterior positions (chains x draws).
    rng : numpy.random.Generator

    Returns
    -------
    ndarray of shape (n_slots,)
        Model names (object array).
    """
    names = list(weights)
    exact = np.array([weights[m] for m in names]) * n_slots
    counts = np.floor(exact).astype(int)
    counts[np.argsort(counts - exact, kind="stable")[: n_slots - counts.sum()]] += 1
    return rng.permutation(np.repeat(np.array(names, dtype=object), counts))


def combine_families(trees: dict[str, xr.DataTree], slot_family: np.ndarray) -> xr.DataTree:
    """One posterior from several families' posteriors of the same shape, position by position.

    Parameters
    ----------
    trees : dict of str to xarray.DataTree
        Per component family, its :func:`assemble_posterior` result (same chains and draws).
    slot_family : ndarray of shape (chains * draws,)
        The family whose draw each (chain, draw) position takes.

    Returns
    -------
    xarray.DataTree
        ``posterior`` with the shared variables (``pi``, ``weight``, ``alpha``, ``atom_prob``)
        of each position's family, and every family's two component parameters, NaN at the
        positions of the other families; ``sample_stats`` with the statistics every family has,
        selected likewise, and ``family`` (chain, draw), the index in
        :data:`bayescal.bayesian.mixture.FAMILIES` of each position's family; ``observed_data``
        and the root attrs of the first family's tree.
    """
    first = next(iter(trees.values()))
    shape = (first["posterior"].sizes["chain"], first["posterior"].sizes["draw"])
    masks = {f: xr.DataArray((slot_family == f).reshape(shape), dims=("chain", "draw")) for f in trees}

    def select(group: str, names: list[str]) -> xr.Dataset:
        out = first[group].to_dataset()[names].copy()
        for f, tree in list(trees.items())[1:]:  # the first family's values are already there
            ds = tree[group].to_dataset()
            for name in names:
                out[name] = xr.where(masks[f], ds[name], out[name], keep_attrs=True)
        return out

    shared = [v for v in first["posterior"].data_vars if all(v in t["posterior"].data_vars for t in trees.values())]
    post = select("posterior", shared)
    for f, tree in trees.items():
        for name in mixture.PARAMS[f]:
            post[name] = tree["posterior"][name].where(masks[f])
    stat_names = [
        v for v in first["sample_stats"].data_vars if all(v in t["sample_stats"].data_vars for t in trees.values())
    ]
    stats = select("sample_stats", stat_names)
    codes = np.array([mixture.FAMILIES.index(f) for f in slot_family], dtype=np.int8)
    stats["family"] = (("chain", "draw"), codes.reshape(shape))
    tree = xr.DataTree.from_dict(
        {"posterior": post, "observed_data": first["observed_data"].to_dataset(), "sample_stats": stats}
    )
    tree.attrs.update(first.attrs)
    return tree
