"""Helpers shared by the test modules: dense reference computations and BLAS-thread probes."""
