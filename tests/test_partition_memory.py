"""A row partition's memory in the default fits: at most one ``n x max_basis`` block.

The default estimators on row partitions (a dask array's chunks; here ``LocalRows``, the same
partition functions in this process) learn on the driver and run the passes over every row on
the partitions: the regressor's posterior and leave-one-out calibration, the classifier's EP.
The classifier's partition holds one ``n_i x p`` block (``V = L^-1 K_uf``, which EP's sweeps
read again and again) and, while a pass runs, a few blocks of rows beside it; the regressor's
passes form ``V`` by blocks of rows and keep none of it. What every call holds at its peak
(its state before the call, plus tracemalloc's peak of what it allocates) is checked against
the block, with the passes' row blocks made small so that a small problem shows a second
block-sized array if one were formed (the module constants are the passes' own budgets,
~4 MiB at scale)."""

import tracemalloc
import warnings

import numpy as np
import pytest
from sklearn.gaussian_process.kernels import Kernel

import skgpsparse.inference._row_columns as row_columns
import skgpsparse.regression._noise_loo as noise_loo
import skgpsparse.regression._partitioned_objectives as objectives
from skgpsparse import SparseGPClassifier, SparseGPRegressor
from skgpsparse.classification.partitioned._fit import fit_rows as fit_classifier_rows
from skgpsparse.regression._fitting import prepare_fit
from skgpsparse.regression._partitioned_fit import fit_rows as fit_regressor_rows
from skgpsparse.regression._targets import target_scaling
from skgpsparse.rows._store import LocalRows

N, P = 8000, 80  # one partition's rows; max_basis


def _state_bytes(obj, X, seen):
    """Bytes of the arrays reachable from ``obj`` (a partition's state), the rows ``X`` not
    counted."""
    if id(obj) in seen or isinstance(obj, Kernel):
        return 0
    seen.add(id(obj))
    if isinstance(obj, np.ndarray):
        return 0 if np.shares_memory(obj, X) else obj.nbytes
    if isinstance(obj, dict):
        values = obj.values()
    elif isinstance(obj, (tuple, list)):
        values = obj
    elif hasattr(obj, "__dict__"):
        values = vars(obj).values()
    else:
        return 0
    return sum(_state_bytes(v, X, seen) for v in values)


class _TracedRows(LocalRows):
    """One partition; ``peaks`` records, per call, the state it held before the call plus
    the peak of what the call allocated."""

    def __init__(self, X, y):
        super().__init__(X, y, partition_rows=len(X))
        self.peaks = []

    def _call(self, fn, args_per_partition):
        part = self.partitions[0]
        before = _state_bytes(part.state, part.X, set())
        tracemalloc.start()
        try:
            out = super()._call(fn, args_per_partition)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        self.peaks.append((fn.__name__, before + peak))
        return out


@pytest.fixture
def small_blocks(monkeypatch):
    # row blocks of 2^13 entries (64 KiB) instead of ~4 MiB: bounded temporaries stay a
    # small part of the N x P block (4.9 MiB)
    monkeypatch.setattr(objectives, "_BLOCK_ENTRIES", 1 << 13)
    monkeypatch.setattr(noise_loo, "_BLOCK_ENTRIES", 1 << 13)
    monkeypatch.setattr(row_columns, "_BLOCK_ENTRIES", 1 << 13)


def _data():
    rng = np.random.RandomState(0)
    X = rng.uniform(-2.0, 2.0, (N, 4))
    f = np.sin(X[:, 0]) + 0.5 * np.cos(X[:, 1] * X[:, 2])
    return X, f + 0.1 * rng.randn(N), (f + 0.3 * rng.randn(N) > 0).astype(int)


def _check(peaks, expected, blocks):
    block = 8 * N * P
    names = {name for name, _ in peaks}
    assert expected <= names, names  # the passes over every row ran on the partition
    worst = max(peaks, key=lambda entry: entry[1])
    assert worst[1] < blocks * block, (worst, block)


def test_regressor_partition_holds_one_block(small_blocks):
    X, y, _ = _data()
    model = SparseGPRegressor(max_basis=P, random_state=0, learning_rows=400)
    model.n_features_in_ = X.shape[1]
    yn, p, rng = prepare_fit(model, y, N, target_scaling(y, True))
    rows = _TracedRows(X, yn)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the short learning's warnings
        fit_regressor_rows(model, rows, p, rng)
    # the posterior's value passes form V = L^-1 K_uf by blocks of rows twice, never whole:
    # no n x p array at all
    _check(rows.peaks, {"_p_factors", "_p_residual_terms", "_partition_sums"}, 0.3)


def test_classifier_partition_holds_one_block(small_blocks):
    X, _, labels = _data()
    clf = SparseGPClassifier(max_basis=P, random_state=0, learning_rows=400)
    clf.classes_, clf.n_features_in_ = np.array([0, 1]), X.shape[1]
    rows = _TracedRows(X, labels)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit_classifier_rows(clf, rows, clf.classes_)
    # EP keeps V (its sweeps read it a dozen times) and per-row vectors beside it
    _check(rows.peaks, {"_p_prior", "_p_adf", "_p_sweep", "_p_evidence"}, 1.3)
