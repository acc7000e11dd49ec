r"""Study of parallel tempering over nested subsamples of a class's data, for convergence at 10^4 scores and up.

Why. From 10^4 scores on no default fit meets R-hat <= 1.01 and ESS >= 400, and the studies so
far (``candidates.md``) say why: the chains of a class's mixture sit in different arrangements of
its components, between which the sweeps, Hamiltonian moves, merge-split proposals and
weight-share slices all cross too rarely. At a few hundred scores the same sweeps do cross (most
fits there converge). Parallel tempering (Geyer 1991) runs a ladder of chains whose targets join
the easy posterior to the hard one and lets adjacent rungs exchange states, so an arrangement
found where crossing is easy can travel up to the posterior of all the data. What this study
measures is whether that gives converged chains and an honest band, and at what cost.

Ladder (research code, registered as ``inference="tempering"`` in this process only). Rung
:math:`l = 0, \dots, L - 1` targets the posterior of the class's mixture given the counts
:math:`c^{(l)}`, nested binomial thinnings of the class's counts :math:`c^{(L-1)} = c`:
:math:`c^{(l)}_b \sim \mathrm{Binomial}(c^{(l+1)}_b, \beta_l / \beta_{l+1})` (a fractional
part of a count, as the calibrator's compressed tails carry, is scaled by the ratio instead) with
:math:`\beta_l = (n_0 / n)^{(L - 1 - l) / (L - 1)}`, so the lowest rung holds about ``bottom_units``
:math:`= n_0` of the class's :math:`n` units and the fractions between rungs are equal. Each rung
is an exact posterior (integer counts, the same prior, the same component family and floor), so
the top rung's chain, whose draws are kept, has the calibrator's posterior as its target however
the states travel. Every rung runs the calibrator's compiled sweeps
(:func:`~bayescal.bayesian._gibbs_kernels.run_chain`: allocations, sticks, concentration,
components; no Hamiltonian moves). After each sweep of every rung, adjacent rungs propose to
exchange their states :math:`\theta = (v, \theta_1, \theta_2, \alpha)`, the even pairs after even
sweeps and the odd ones after odd sweeps (the deterministic even-odd scheme of Syed et al. 2022,
whose states travel the ladder in a number of rounds linear, not quadratic, in :math:`L`). With
the allocations summed out, the prior cancels and the exchange of rungs :math:`l, l + 1` is
accepted with probability :math:`\min(1, e^{D(\theta_l) - D(\theta_{l+1})})`, where
:math:`D(\theta) = \sum_b (c^{(l+1)}_b - c^{(l)}_b) \log \sum_k w_k \phi_k(x_b)` is the
log-likelihood of the units the upper rung has and the lower one lacks
(:func:`~bayescal.bayesian._gibbs_kernels.class_loglik`). Every rung of every replicate (chain)
starts at its own draw from the prior, as the calibrator's dispersed start does.

Rows are the coverage study's (:func:`dpm_coverage.run_one`, the KDE calibrator as the other),
their ``route`` the configuration; the table sets each beside the default calibrator's rows on
the same seeds (:func:`_study_files.paired_table`), with the map's worst R-hat and lowest bulk
ESS over the data region and the fits meeting the bar; ``swap_acceptance`` per pair of rungs is
in each class's diagnostics (a string, lowest pair first).

Findings (2026-12-02, monotone, piles and plateau truths at 10^4 scores, seeds 0-2, and monotone at
10^5, seed 0; both component families fitted in full; ``benchmarks/results/tempering_study.md``).
Rejected. With 16 rungs from 300 units the exchanges are accepted at 0.15-0.6 between every pair of
rungs (a probe with Gaussian components, monotone seed 0), and the chains mix better than the
default's on the same replicates (worst R-hat 1.03-1.13 against 1.10-1.76, lowest bulk ESS 12-126
against 3-23; the error 39 % and 14 % lower on the monotone and piles truths, 6 % higher on the
plateau), but no fit met R-hat <= 1.01 and ESS >= 400 (0 of 9), at 17-22 s a fit against 1-2.6 s.
The warning's remedy, longer Hamiltonian moves (``benchmarks/convergence_remedy.py``), meets the
bar in 20 of 26 fits at 10^4 in 11-44 s. With 8 rungs some pairs exchange rarely (0.03-0.06 in a
probe with Gaussian components) and the chains mix less well than with 16 (monotone seed 0: R-hat
1.151 and ESS 10 against 1.044 and 44). At 10^5 (monotone seed 0, 24 rungs from 1,000 units) the
upper pairs exchange at 0.13-0.2 and the chains do not mix (R-hat 1.103 and ESS 17 against the
default's 1.267 and 6), at 36 s a fit against 4.7 s, with a higher error (0.0018 against 0.0013):
the rungs needed grow with log N, and each costs a chain of sweeps. An arrangement found at a few
hundred scores does travel up, but the top rung needs many round trips per effective draw, which
cost more than longer Hamiltonian moves.

Usage::

    python benchmarks/tempering_study.py --truths monotone piles plateau --n 10000 --seeds 3 --levels 16

Rows go to ``benchmarks/results/tempering_study.csv``; the table beside it, ``tempering_study.md``,
with every run's command, date and machine.

References
----------
Geyer, C. J. (1991). Markov chain Monte Carlo maximum likelihood. Computing Science and
Statistics: Proceedings of the 23rd Symposium on the Interface, 156-163.
Syed, S., Bouchard-Côté, A., Deligiannidis, G. & Doucet, A. (2022). Non-reversible parallel
tempering: a scalable highly parallel MCMC scheme. JRSS B 84(2), 321-350.
"""

from __future__ import annotations

import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _study_files import (
    CONVERGENCE_COLUMNS,
    command_line,
    finish_study,
    paired_table,
    register_route,
    run_replicates,
    study_parser,
)
from dpm_coverage import run_one

from bayescal.bayesian import gibbs
from bayescal.bayesian.class_fit import ClassFit


def ladder_counts(counts: np.ndarray, levels: int, bottom_units: float, rng: np.random.Generator) -> list[np.ndarray]:
    """The rungs' counts, lowest first: nested binomial thinnings of the whole part of ``counts``
    (their fractional parts scaled) (the top rung) to about
    ``bottom_units`` units at the bottom, in equal fractions (module docstring). One rung when the
    class holds no more than twice ``bottom_units``."""
    units = float(counts.sum())
    if levels < 2 or units <= 2.0 * bottom_units:
        return [counts]
    beta = (bottom_units / units) ** (np.arange(levels - 1, -1, -1) / (levels - 1))
    rungs = [counts]
    for lower, upper in zip(beta[-2::-1], beta[:0:-1]):
        upper_counts, ratio = rungs[-1], lower / upper
        whole = np.floor(upper_counts)
        rungs.append(rng.binomial(whole.astype(np.int64), ratio) + ratio * (upper_counts - whole))
    return rungs[::-1]


def fit_tempering(
    x: np.ndarray,
    counts: np.ndarray,
    prior: dict,
    *,
    n_components: int,
    random_seed: int | None,
    draws: int = 500,
    chains: int = 2,
    tune: int = 500,
    thin: int | None = None,
    levels: int = 12,
    bottom_units: float = 300.0,
    family: str = "gaussian",
) -> ClassFit:
    """One class's mixture by parallel tempering over nested subsamples (module docstring), as an inference route."""
    t0 = time.perf_counter()
    x, counts = np.asarray(x, dtype=float), np.asarray(counts, dtype=float)
    keep = counts > 0
    x, counts = x[keep], counts[keep]
    K, C, n_keep, tune = int(n_components), int(chains), int(draws), int(tune)
    units = float(counts.sum())
    thin = gibbs.default_thin(units) if thin is None else int(thin)
    # the top rung's chains take the calibrator's streams of random_seed; the ladder and the lower rungs
    # a stream of their own
    ladder_seed, *chain_seeds = np.random.SeedSequence(random_seed, spawn_key=(1,)).spawn(1 + C)
    rungs = ladder_counts(counts, int(levels), float(bottom_units), np.random.default_rng(ladder_seed))
    L = len(rungs)
    # the top rung's chains: the calibrator's compiled sweeps, started apart (their draws are kept)
    top = gibbs._CompiledChains(
        x, counts, prior, K, C, tune, thin, n_keep, 2, False, family, random_seed, None, 0, 0, dispersed=True
    )
    kern = top.kern
    n_iter = top.n_iter
    gaps = [rungs[lv + 1] - rungs[lv] for lv in range(L - 1)]
    # each rung's counts as run_chain takes them: whole parts, fractional parts, all
    counts_args = [(np.floor(r).astype(np.int64), r - np.floor(r), r) for r in rungs]
    # a lower rung's warm-up never ends (tune past the last sweep), so it writes no draws: into one-row arrays
    never, no_draws = n_iter + 1, (np.empty((1, K)),) * 3 + (np.empty(1), np.empty(1), np.empty(1, dtype=np.int64))
    swaps = np.zeros((C, max(L - 1, 1), 2))  # accepted, proposed per pair of rungs

    def run(c: int) -> None:
        streams = [np.random.default_rng(s) for s in chain_seeds[c].spawn(L)]
        gens = [*streams[: L - 1], top.gens[c]]
        swap_rng = streams[-1]
        states = [top._prior_draw(g, K) for g in gens[: L - 1]] + [top.state[c]]
        stats = np.zeros((L, 8))
        minv = np.ones((L, 3 * K - 1))
        eps = np.full((L, 1), 0.2)
        n = x.size
        E, topv, totv, bits = np.empty((K, n)), np.empty(n), np.empty(n), np.empty(K * n, dtype=np.int64)
        logw = np.empty(K)
        top_draws = (*(top.out[k][c] for k in ("weight", top.p1_name, top.p2_name)), top.out_alpha[c], top.out_ll[c],
                     top.out_occ[c])  # fmt: skip
        rung_args = [(*counts_args[lv], never, no_draws) for lv in range(L - 1)] + [(*counts_args[-1], tune, top_draws)]

        def gap_loglik(gap: np.ndarray, state: list) -> float:
            kern.log_weights(state[0], logw)
            return kern.class_loglik(
                top.family_code, top.xa, top.xb, gap, logw, state[1], state[2], E, topv, totv, bits
            )

        for it in range(n_iter):
            for lv in range(L):
                v, th1, th2, alpha = states[lv]
                c_int, c_frac, c_all, rung_tune, draws_out = rung_args[lv]
                states[lv][3] = kern.run_chain(
                    top.family_code, top.xa, top.xb, c_int, c_frac, c_all, top.m, top.s2, top.ell, top.tau, top.loc1,
                    top.loc2, top.a, top.b, top.log_floor, v, th1, th2, float(alpha), it, it + 1, rung_tune, thin,
                    top.n_mh, False, 0, 0, False, gens[lv], *draws_out, stats[lv], minv[lv], eps[lv],
                )  # fmt: skip
            for lv in range(it % 2, L - 1, 2):  # even pairs after even sweeps, odd after odd
                log_ratio = gap_loglik(gaps[lv], states[lv]) - gap_loglik(gaps[lv], states[lv + 1])
                swaps[c, lv, 1] += 1.0
                if np.log(swap_rng.random()) < log_ratio:
                    swaps[c, lv, 0] += 1.0
                    states[lv], states[lv + 1] = states[lv + 1], states[lv]
        top.state[c] = states[-1]
        top.stats[c] += stats[-1]

    with ThreadPoolExecutor(max_workers=min(C, 2)) as pool:
        list(pool.map(run, range(C)))
    top.it = n_iter
    out, out_alpha, out_ll, out_occ, extra = top.draws(n_keep)
    pair_rate = swaps[..., 0].sum(axis=0) / np.maximum(swaps[..., 1].sum(axis=0), 1.0)
    diagnostics = {
        "route": "tempering",
        "family": family,
        "runtime_s": time.perf_counter() - t0,
        "levels": L,
        "rung_units": " ".join(f"{r.sum():.0f}" for r in rungs),
        "swap_acceptance": " ".join(f"{a:.2f}" for a in pair_rate),
        "thin": thin,
        "chains": C,
    } | extra
    return gibbs.chains_class_fit(out, out_alpha, out_ll, out_occ, diagnostics)


def register() -> None:
    """Make ``inference="tempering"`` fit with :func:`fit_tempering` in this process, both component families."""
    register_route("tempering", fit_tempering)


def label(levels: int, bottom_units: float, chains: int, draws: int, tune: int) -> str:
    """The ``route`` of a configuration's rows."""
    return f"tempering ({levels} rungs from {bottom_units:g} units, {chains} x {draws} draws, tune {tune})"


def main() -> None:
    ap = study_parser(__doc__, "tempering_study.py", n=(10000,), seeds=3)
    ap.add_argument("--levels", type=int, default=12, help="rungs of the ladder, the top one included")
    ap.add_argument("--bottom-units", type=float, default=300.0, help="units of the lowest rung")
    ap.add_argument("--chains", type=int, default=2)
    ap.add_argument("--draws", type=int, default=500, help="kept draws per chain")
    ap.add_argument("--tune", type=int, default=500, help="warm-up sweeps per chain")
    args = ap.parse_args()
    register()
    keys = ("levels", "bottom_units", "chains", "draws", "tune")
    options = {"route_options": {k: getattr(args, k) for k in keys}}
    route = label(*(getattr(args, k) for k in keys))

    def one_row(truth: str, n: int, seed: int) -> dict:
        return run_one(truth, n, seed, "tempering", options, ["kde"]) | {"route": route}

    run_replicates(args, one_row)
    command = command_line("tempering_study.py", args, keys)
    finish_study(
        args, "Parallel tempering over nested subsamples against the default", command,
        lambda p: paired_table(p, CONVERGENCE_COLUMNS),
    )  # fmt: skip


if __name__ == "__main__":
    main()
