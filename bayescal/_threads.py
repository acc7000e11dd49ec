"""Numerical work on small arrays with one BLAS thread (:func:`one_blas_thread`)."""

from __future__ import annotations

from contextlib import AbstractContextManager

__all__ = ["one_blas_thread"]


def one_blas_thread() -> AbstractContextManager:
    """A context in which the BLAS libraries loaded in the process (OpenBLAS, MKL, BLIS) use one thread.

    For the inference routes: their BLAS calls are on arrays of a class's parameters (a few
    hundred numbers: L-BFGS-B's updates, PyTensor's small products), where threads gain nothing,
    and when another process keeps a core busy each call waits for a descheduled BLAS thread.
    Measured with ``benchmarks/dpm_speed.py --load``. The libraries are looked up at every call
    (about a millisecond), so one loaded since the last fit is limited too. The limit is the
    libraries' own, so it holds for the whole process (other threads see it too) while the
    context lasts; the setting before the context is restored after it.

    Returns
    -------
    contextlib.AbstractContextManager
    """
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1, user_api="blas")
