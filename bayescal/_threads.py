"""Threads of a fit: numerical work on small arrays with one BLAS thread (:func:`one_blas_thread`),
and work mapped over threads whose warnings still name the user's line (:func:`map_in_threads`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from typing import Any

__all__ = ["map_in_threads", "one_blas_thread"]


def one_blas_thread() -> AbstractContextManager:
    """A context in which the BLAS libraries loaded in the process (OpenBLAS, MKL, BLIS) use one thread.

    For the inference routes: their BLAS calls are on arrays of a class's parameters (a few
    hundred numbers: L-BFGS-B's updates, PyTensor's small products), where threads gain nothing,
    and when another process keeps a core busy each call waits for a descheduled BLAS thread.
    Measured on ``docs/evidence/speed.md``, "Under load". The libraries are looked up at every call
    (about a millisecond), so one loaded since the last fit is limited too. The limit is the
    libraries' own, so it holds for the whole process (other threads see it too) while the
    context lasts; the setting before the context is restored after it.

    Returns
    -------
    contextlib.AbstractContextManager
    """
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1, user_api="blas")


def map_in_threads(fn: Callable[[Any], Any], items: Iterable, max_workers: int) -> list:
    """``[fn(item) for item in items]`` in up to ``max_workers`` threads, with the package's
    warnings of each call issued afterwards from the calling thread, in the order of ``items``,
    so that they name the user's line (:func:`bayescal._warnings.warn` in a worker thread finds
    no user frame on its stack)."""
    from bayescal._warnings import held, warn

    def run(item: Any) -> tuple[Any, list]:
        with held() as caught:
            return fn(item), caught

    with ThreadPoolExecutor(max_workers=max_workers) as pool:
        done = list(pool.map(run, items))
    for _, caught in done:
        for message, category in caught:
            warn(message, category)
    return [result for result, _ in done]
