"""Frequentist calibrators of the literature, one module per family."""
