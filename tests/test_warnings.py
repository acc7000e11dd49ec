"""Warnings are attributed to the caller's line, whatever path raises them."""

import warnings

import numpy as np

from bayescal import IsotonicCalibrator
from bayescal.metrics import ece


def test_the_same_warning_points_at_the_callers_line_on_every_path():
    """The weights warning is raised two calls deep from a metric and four from a calibrator's
    fit; both must name this file, or a notebook user cannot tell which call it is about."""
    rng = np.random.default_rng(0)
    s = rng.random(200)
    y = (rng.random(200) < s).astype(int)
    w = np.full(200, 1e14)  # totals beyond what weights can count: rescaled with a warning
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        IsotonicCalibrator().fit(s, y, sample_weight=w)
        ece(y, s, sample_weight=w)
    assert len(record) == 2 and all("sample_weight totals" in str(r.message) for r in record)
    assert [r.filename for r in record] == [__file__] * 2
