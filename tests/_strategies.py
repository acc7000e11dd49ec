"""Hypothesis strategies shared by the calibrator tests."""

from hypothesis import strategies as st

# (score, label) rows mixing heavy ties at 0, 0.1, 0.5, 0.9, 1 with arbitrary probabilities
score_rows = st.lists(
    st.tuples(st.sampled_from([0.0, 0.1, 0.5, 0.9, 1.0]) | st.floats(0, 1), st.integers(0, 1)),
    min_size=2,
    max_size=80,
)
