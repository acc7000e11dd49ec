"""Compiling with numba: on-disk cache where it can be written, in memory otherwise."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["njit"]


def njit(fn: Callable | None = None, **options: Any) -> Any:
    """``numba.njit(cache=True, nogil=True, **options)``, without the disk cache when no cache
    location is writable (a read-only install with no writable user cache), where numba
    refuses ``cache=True``. Usable bare (``@njit``) or with options (``@njit(inline="always")``)."""
    import numba

    def wrap(f: Callable) -> Any:
        try:
            return numba.njit(cache=True, nogil=True, **options)(f)
        except RuntimeError:  # "cannot cache function ...: no locator available"
            return numba.njit(cache=False, nogil=True, **options)(f)

    return wrap(fn) if fn is not None else wrap
