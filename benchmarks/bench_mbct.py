"""MBCT at scale: fit on 10^6 rows with 8 discrete features (target: under 60 s on 2 cores).

The data mimic click-through logs: 8 categorical features with 2 to 12 levels, a base
model whose score ignores two of them, and a true probability whose logit is the score's
logit scaled and shifted per segment of those two features (over-confident in some
segments, under-confident in others). The benchmark prints the fit time (best of
``--repeat``), the number of distinct feature combinations MBCT aggregated the rows into,
the predict throughput on 10^6 new rows, and, as a sanity check, the mean absolute error to
the true probability before and after calibration. The machine's load average and the
process's CPU time are printed because the 2 cores are shared: under contention the wall
time exceeds the CPU time. With these cardinalities (2.8 million possible combinations
of levels and 20 score bins) nearly every row is its own combination, the hardest case for
the aggregation.

Usage::

    python benchmarks/bench_mbct.py                 # n = 10^6, 2 repeats
    python benchmarks/bench_mbct.py --n 100000 --repeat 3
    python benchmarks/bench_mbct.py --mvce-bins 8192 --mvce-shuffles 4   # random-bin criterion
    python benchmarks/bench_mbct.py --n 10000000 --dask-chunk 1000000 --repeat 1   # the Dask route

With ``--dask-chunk`` the training rows are a Dask dataframe whose partitions are simulated
inside their tasks (seeded by partition), so no process ever holds all of them, and MBCT
fits through its Dask route on the threaded scheduler. The peak resident memory of the
process (``ru_maxrss``) is printed after the fits, before the 10^6 evaluation rows exist;
the time of one pass that only simulates the partitions and sums a column is printed too,
since the fit simulates every partition twice (its two passes).
"""

from __future__ import annotations

import argparse
import os
import resource
import time

import numpy as np
from scipy.special import expit

LEVELS = (2, 3, 4, 5, 6, 8, 10, 12)


def simulate(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Scores, labels, 8 integer features and the true probability."""
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.integers(0, k, n) for k in LEVELS])
    z = rng.normal(-2.0, 1.2, n) + 0.1 * X[:, 2]
    slope = np.where(X[:, 0] == 0, 0.6, 1.5)
    shift = 0.4 * (X[:, 1] - 1)
    p_true = expit(slope * z + shift)
    y = (rng.random(n) < p_true).astype(np.int8)
    return expit(z), y, X, p_true


def simulate_frame(n: int, seed: int):
    """One partition of the Dask benchmark: :func:`simulate` as a pandas DataFrame."""
    import pandas as pd

    s, y, X, _ = simulate(n, seed)
    return pd.DataFrame({"score": s, "label": y, **{f"x{j}": X[:, j] for j in range(X.shape[1])}})


def dask_frame(n: int, chunk: int):
    """``n`` rows in partitions of ``chunk`` rows, each simulated by its own task (seeds 1000, 1001, ...)."""
    import dask
    import dask.dataframe as dd

    sizes = [min(chunk, n - start) for start in range(0, n, chunk)]
    parts = [dask.delayed(simulate_frame)(size, 1000 + i) for i, size in enumerate(sizes)]
    return dd.from_delayed(parts, meta=simulate_frame(1, 0).iloc[:0], verify_meta=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument(
        "--mvce-bins", type=int, default=None, help="MBCT(mvce_bins=...); default: one bin per combination"
    )
    parser.add_argument("--mvce-shuffles", type=int, default=8)
    parser.add_argument(
        "--dask-chunk", type=int, default=None, help="fit through the Dask route on partitions of this many rows"
    )
    args = parser.parse_args()

    from bayescal.baselines.mbct import MBCT

    print(f"n = {args.n}, 8 features with levels {LEVELS}; load average before: {os.getloadavg()}")
    if args.dask_chunk is None:
        s, y, X, _ = simulate(args.n, 0)
        inputs = (s, y), {"X": X}
    else:
        import dask

        dask.config.set(scheduler="threads")
        ddf = dask_frame(args.n, args.dask_chunk)
        start = time.perf_counter()
        ddf["score"].sum().compute()
        print(
            f"Dask: {ddf.npartitions} partitions of {args.dask_chunk} rows; one pass that only simulates "
            f"them: {time.perf_counter() - start:.2f} s"
        )
        inputs = (ddf["score"], ddf["label"]), {"X": ddf[[f"x{j}" for j in range(len(LEVELS))]]}
    fit_times, cpu_times = [], []
    for _ in range(args.repeat):
        est = MBCT(mvce_bins=args.mvce_bins, mvce_shuffles=args.mvce_shuffles, random_state=0)
        start, cpu = time.perf_counter(), time.process_time()
        est.fit(*inputs[0], **inputs[1])
        fit_times.append(time.perf_counter() - start)
        cpu_times.append(time.process_time() - cpu)
    print(f"peak RSS after the fits: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20:.2f} GiB")
    s_new, _, X_new, p_new = simulate(min(args.n, 1_000_000), 1)
    start = time.perf_counter()
    p = est.predict_proba(s_new, X=X_new)[:, 1]
    predict_time = time.perf_counter() - start
    print(
        f"fit: best {min(fit_times):.2f} s of {[round(t, 2) for t in fit_times]} "
        f"(CPU time {[round(t, 2) for t in cpu_times]} s) "
        f"({est.n_combinations_} combinations, {est.tree_roots_.size} trees, {est.node_feature_.size} nodes)"
    )
    print(f"predict: {predict_time:.2f} s, {s_new.size / predict_time:,.0f} rows/s")
    print(
        f"mean |p - p_true|: uncalibrated {np.mean(np.abs(s_new - p_new)):.4f}, MBCT {np.mean(np.abs(p - p_new)):.4f}"
    )
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
