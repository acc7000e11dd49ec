"""Speed of the DPM calibrator (issue "Bayesian core", item 3).

For N = 10^3 .. 10^7 scores (f0 = Beta(2, 5), f1 = Beta(5, 2), pi = 0.4) the script times,
in this process after one warm-up fit:

* a full default ``DPMCalibrator`` fit (``components="select"``: both component families
  started, compared on their first draws, the kept one's chains run on; above 100,000 scores
  in a class, so from N = 10^6 on here, both run in full and averaged; both classes,
  posterior draws, map on the grid, averaging weight of the constant map, convergence
  check), and within it the kept family's sampler time (the classes' ``runtime_s``) and the
  map's convergence (worst split R-hat, lowest bulk and tail ESS over the data region,
  ``diagnostics_["map"]``),
* the same fit with one component family, ``components="gaussian"`` (the default before
  ``"select"``), and with ``components="auto"`` (both families fitted in full, averaged),
* the same fit with the sampler's Hamiltonian moves on both classes (``route_options={"hmc_steps": 20}``;
  by default they run on classes of more than 20,000 scores), with its map's R-hat and bulk ESS,
* ``predict_proba`` on all N scores,
* ``IsotonicCalibrator`` fit + predict on the same data,
* scikit-learn's ``BayesianGaussianMixture`` (20 components, Dirichlet-process prior,
  variational) fitted to each class's logit scores (up to ``--bgm-max`` scores; it does not
  compress, so its cost grows with N), once with scikit-learn's defaults (at most 100
  variational iterations, which on these scores end before its convergence test is met: it
  warns ``ConvergenceWarning`` and ``converged_`` is False) and once run to convergence
  (``max_iter`` raised to :data:`BGM_CONVERGED_MAX_ITER`, up to ``--bgm-converged-max``
  scores), with the iterations it took per class,

and, in ``--repeats`` fresh Python processes (the fastest; under ``--load`` the slowest too), the
first fit (import + fit, N = 10^4), which for the
PyMC routes includes compilation (empty or warm cache, whatever the machine has); the first fit ever,
in one more fresh process whose compile caches (numba's for the sampler, PyTensor's for the
PyMC routes) point at empty folders, as after installing (``--no-cold`` skips it); and the
default fit either side of the calibrator's ``compress_above`` (the same replicate with
``compress_above`` scores, fitted raw, and with one score more, compressed), where the
sampler's data change from the scores to binned counts.

Usage::

    python benchmarks/dpm_speed.py [--n 1000 10000 ...] [--repeats 2] [--route gibbs] [--load] [--no-cold]

The machine is shared: each figure is the minimum over ``--repeats`` runs, and the script
prints the load average before and after. ``--load`` times everything while another process
multiplies matrices with its BLAS threads (:data:`BUSY`), as on a user's machine where a
second notebook fits a model: numerical libraries that start more threads than there are
free cores slow down there; the default fit's column then gives the slowest run too, in brackets.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dpm_coverage import parse_options
from make_evidence import MACHINE_LINE, machine


def simulate(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.4).astype(int)
    s = np.where(y == 1, rng.beta(5, 2, n), rng.beta(2, 5, n))
    return s, y


def times_of(fn, repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return times


BGM_CONVERGED_MAX_ITER = 100_000
"""``max_iter`` of the converged ``BayesianGaussianMixture`` column: far above the iterations its
convergence test (``tol=1e-3`` on the lower bound's change) needs on these scores."""


def best_of(fn, repeats: int) -> float:
    return min(times_of(fn, repeats))


FIRST_FIT = """
import time
t0 = time.perf_counter()
import numpy as np
from bayescal import make_calibrator
rng = np.random.default_rng(0)
y = (rng.random(10000) < 0.4).astype(int)
s = np.where(y == 1, rng.beta(5, 2, y.size), rng.beta(2, 5, y.size))
make_calibrator("dpm", inference={route!r}, random_state=0, **{options!r}).fit(s, y)
print(time.perf_counter() - t0)
"""


def first_fit(route: str, params: dict, env: dict | None = None) -> float:
    """Seconds of :data:`FIRST_FIT` (import + fit) in a fresh Python process with environment ``env``."""
    code = FIRST_FIT.format(route=route, options=params)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    return float(done.stdout.split()[-1])


def first_fit_cold(route: str, params: dict) -> float:
    """:func:`first_fit` with the compile caches pointed at empty folders (``NUMBA_CACHE_DIR`` for
    the sampler's kernels, PyTensor's ``base_compiledir`` for the PyMC routes), so everything the
    fit runs is compiled, as on the first fit after installing; the folders are removed after."""
    with tempfile.TemporaryDirectory() as empty:
        flags = ",".join(filter(None, [os.environ.get("PYTENSOR_FLAGS", ""), f"base_compiledir={empty}/pytensor"]))
        env = os.environ | {"NUMBA_CACHE_DIR": f"{empty}/numba", "PYTENSOR_FLAGS": flags}
        return first_fit(route, params, env)


BUSY = """
import numpy as np
a = np.random.default_rng(0).random((300, 300))
while True:
    a = a @ a
    a /= np.abs(a).max()
"""
"""The load of ``--load``: another process multiplying matrices with its BLAS threads, as a second
notebook fitting a model would."""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", nargs="+", type=int, default=[10**3, 10**4, 10**5, 10**6, 10**7])
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--route", default="gibbs")
    ap.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="NAME=JSON",
        help="a DPM parameter set on every DPM fit, e.g. 'route_options={\"thin\": 20}' (repeatable; a "
        "route_options given here is merged into the Hamiltonian column's)",
    )
    ap.add_argument(
        "--cold",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also time the first fit ever: one fresh process with empty compile caches (--no-cold skips it)",
    )
    ap.add_argument("--bgm-max", type=int, default=10**5)
    ap.add_argument("--bgm-converged-max", type=int, default=10**4)
    ap.add_argument(
        "--load", action="store_true", help="time it all while another process multiplies matrices (DPM fit: min (max))"
    )
    args = ap.parse_args()
    args.params = parse_options(args.option, ap.error)
    busy = subprocess.Popen([sys.executable, "-c", BUSY]) if args.load else None
    try:
        run(args)
    finally:
        if busy is not None:
            busy.kill()


def run(args: argparse.Namespace) -> None:
    from scipy.special import logit
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.mixture import BayesianGaussianMixture

    from bayescal import make_calibrator

    print(f"{MACHINE_LINE}{machine()}")
    print(f"load average (1, 5, 15 min) before: {os.getloadavg()}; CPUs: {os.cpu_count()}")
    if args.load:
        print("under load: another process multiplies matrices with its BLAS threads throughout (--load)")
    firsts = [first_fit(args.route, args.params) for _ in range(args.repeats)]
    slowest = f" (slowest {max(firsts):.1f} s)" if args.load else ""
    print(
        f"first fit in a fresh process (import + fit, N = 10^4, route {args.route}; fastest of {args.repeats} "
        f"processes): {min(firsts):.1f} s{slowest}"
    )
    if args.cold:
        print(
            f"first fit ever (import + fit, N = 10^4, route {args.route}; one process with empty compile caches, "
            f"numba's and PyTensor's, as after installing): {first_fit_cold(args.route, args.params):.1f} s"
        )
    s, y = simulate(1000, 1)

    def dpm(**params):
        """The DPM calibrator of the run: the route, seed 0 and ``--option`` parameters, then ``params``
        (``route_options`` merged)."""
        merged = args.params | params
        if "route_options" in params and "route_options" in args.params:
            merged["route_options"] = args.params["route_options"] | params["route_options"]
        return make_calibrator("dpm", inference=args.route, random_state=0, **merged)

    if args.params:
        print(f"every DPM fit with {args.params}")
    dpm().fit(s, y)  # warm-up
    edge = make_calibrator("dpm").compress_above
    s, y = simulate(edge + 1, 2)
    raw, binned = (best_of(lambda m=m: dpm().fit(s[:m], y[:m]), args.repeats) for m in (edge, edge + 1))
    print(
        f"either side of compress_above ({edge:,} continuous scores; one replicate, fitted without and with "
        f"its last score): {raw:.2f} s on the raw scores, {binned:.2f} s compressed ({binned / raw:.2f} times)"
    )

    print(
        "| N | DPM fit s | of which sampler s | map R-hat / bulk ESS / tail ESS | components='gaussian' s "
        "| components='auto' s | hmc_steps=20 s (R-hat / bulk ESS) | DPM predict_proba(N) s "
        "| isotonic fit+predict s | BayesianGaussianMixture s (defaults; converged) "
        "| BayesianGaussianMixture to convergence s (iterations per class) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for n in args.n:
        s, y = simulate(n)
        holder = {}

        def fit_dpm():
            holder["m"] = dpm().fit(s, y)

        fit_times = times_of(fit_dpm, args.repeats)
        t_fit = f"{min(fit_times):.2f}" + (f" ({max(fit_times):.2f})" if args.load else "")
        t_gaussian = best_of(lambda: dpm(components="gaussian").fit(s, y), args.repeats)
        t_auto = best_of(lambda: dpm(components="auto").fit(s, y), args.repeats)
        if args.route == "gibbs":  # the sampler's Hamiltonian moves on every class

            def fit_hmc():
                holder["h"] = dpm(route_options={"hmc_steps": 20}).fit(s, y)

            conv_h = (best_of(fit_hmc, args.repeats), holder["h"].diagnostics_["map"])
            hmc = f"{conv_h[0]:.2f} ({conv_h[1]['rhat_max']:.3f} / {conv_h[1]['ess_bulk_min']:.0f})"
        else:
            hmc = f"not run (route {args.route})"
        t_pred = best_of(lambda: holder["m"].predict_proba(s), args.repeats)
        t_iso = best_of(lambda: make_calibrator("isotonic").fit(s, y).predict_proba(s), args.repeats)
        t = logit(np.clip(s, 1e-12, 1 - 1e-12))

        def fit_bgm(**options):
            """Both classes' BayesianGaussianMixture fits (kept in ``holder["bgm"]``)."""
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                holder["bgm"] = [
                    BayesianGaussianMixture(
                        n_components=20, weight_concentration_prior_type="dirichlet_process", random_state=0, **options
                    ).fit(t[y == c, None])
                    for c in (0, 1)
                ]

        if n <= args.bgm_max:
            t_bgm = best_of(fit_bgm, args.repeats)
            bgm = f"{t_bgm:.2f} ({'yes' if all(b.converged_ for b in holder['bgm']) else 'no'})"
        else:
            bgm = f"not run (N > {args.bgm_max})"
        if n <= args.bgm_converged_max:
            t_conv = best_of(lambda: fit_bgm(max_iter=BGM_CONVERGED_MAX_ITER), args.repeats)
            its = " / ".join(str(b.n_iter_) if b.converged_ else f">{b.n_iter_}" for b in holder["bgm"])
            bgm_conv = f"{t_conv:.2f} ({its})"
        else:
            bgm_conv = f"not run (N > {args.bgm_converged_max})"
        diag = holder["m"].diagnostics_
        sampler = sum(
            diag[f][f"class_{c}"].get("runtime_s", float("nan"))
            for f in ("gaussian", "beta")
            if f in diag
            for c in (0, 1)
        )
        conv = diag["map"]
        conv_s = f"{conv['rhat_max']:.3f} / {conv['ess_bulk_min']:.0f} / {conv['ess_tail_min']:.0f}"
        cols = [
            f"{n:.0e}",
            t_fit,
            f"{sampler:.2f}",
            conv_s,
            f"{t_gaussian:.2f}",
            f"{t_auto:.2f}",
            hmc,
            f"{t_pred:.2f}",
            f"{t_iso:.2f}",
            bgm,
            bgm_conv,
        ]
        print("| " + " | ".join(cols) + " |", flush=True)
    print(f"load average (1, 5, 15 min) after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
