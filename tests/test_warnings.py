"""Warnings are attributed to the caller's line, whatever path raises them."""

import warnings

import numpy as np

from bayescal import IsotonicCalibrator
from bayescal.metrics import reliability_curve


def test_the_same_warning_points_at_the_callers_line_on_every_path():
    """The weights warning is raised two calls deep from a metric (one whose counts are in the
    weights' units, so it keeps their scale) and four from a calibrator's fit; both must name this file, or a notebook user cannot tell which call it is about."""
    rng = np.random.default_rng(0)
    s = rng.random(200)
    y = (rng.random(200) < s).astype(int)
    w = np.full(200, 1e14)  # totals beyond what weights can count: rescaled with a warning
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        IsotonicCalibrator().fit(s, y, sample_weight=w)
        reliability_curve(y, s, sample_weight=w)
    assert len(record) == 2 and all("sample_weight totals" in str(r.message) for r in record)
    assert [r.filename for r in record] == [__file__] * 2


def test_warnings_of_work_in_threads_point_at_the_callers_line_in_order():
    """A worker thread's stack holds no user frame, so the package's warnings raised there are
    issued again from the calling thread, in the order of the work, not as they happened."""
    import time

    from bayescal._threads import map_in_threads
    from bayescal._warnings import warn

    def work(i):
        time.sleep(0.05 * (2 - i))  # the later item warns first
        warn(f"item {i}")
        return i * 10

    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        out = map_in_threads(work, [0, 1, 2], 3)
    assert out == [0, 10, 20]
    assert [str(r.message) for r in record] == ["item 0", "item 1", "item 2"]
    assert [r.filename for r in record] == [__file__] * 3
    with warnings.catch_warnings(record=True) as record:  # nothing is held once the work is done
        warnings.simplefilter("always")
        warn("after")
    assert [str(r.message) for r in record] == ["after"]
