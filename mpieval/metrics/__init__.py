"""The metric kinds: one module each, all built on :mod:`mpieval.metric`."""
