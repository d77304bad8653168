"""A class's own kernel in the shared one-vs-rest fit (multiclass._class_kernels)."""

import contextlib
import io
import re
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process.kernels import RBF, CompoundKernel
from sklearn.gaussian_process.kernels import ConstantKernel as C

import skgpsparse.classification.multiclass._shared_fit as shared_fit
from skgpsparse import SparseGPClassifier
from skgpsparse.classification.partitioned._fit import fit_rows
from skgpsparse.rows._store import LocalRows


def _stripes(n=600, seed=0):
    """Three classes: class 2 on stripes across feature 0 (a short length scale there, none
    along the others), classes 0 and 1 split smoothly by feature 1 elsewhere."""
    rng = np.random.RandomState(seed)
    X = rng.uniform(-3, 3, size=(n, 3))
    y = np.where(np.sin(4 * X[:, 0]) > 0.5, 2, np.where(X[:, 1] < 0, 0, 1))
    return X, y


def _fit(X, y, trial=True, monkeypatch=None, **params):
    if not trial:
        monkeypatch.setattr(shared_fit, "CLASS_KERNELS", False)
    out = io.StringIO()
    with warnings.catch_warnings(), contextlib.redirect_stdout(out):
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf = SparseGPClassifier(random_state=0, max_basis=30, verbose=1, **params).fit(X, y)
    if not trial:
        monkeypatch.setattr(shared_fit, "CLASS_KERNELS", True)
    return clf, out.getvalue()


_LINE = re.compile(r"class (\d): own kernel (kept|not kept) \(log evidence and prior "
                   r"([-+][\d.]+) nats, charge ([\d.]+)")


def test_the_class_whose_boundary_needs_other_length_scales_keeps_its_own(monkeypatch):
    X, y = _stripes()
    clf, log = _fit(X, y)
    plain, _ = _fit(X, y, trial=False, monkeypatch=monkeypatch)
    decisions = {int(k): kept == "kept" for k, kept, _, _ in _LINE.findall(log)}
    assert decisions == {0: False, 1: False, 2: True}
    assert [est._own_kernel for est in clf.estimators_] == [False, False, True]
    # its own length scale across the stripes is far shorter than along the other features,
    # where the shared kernel's are alike for the three classes
    own = clf.estimators_[2].kernel_.k2.length_scale
    assert own[0] < own[1] / 10 and own[0] < own[2] / 10
    assert plain.kernels_[2].k2.length_scale[0] > own[0] * 3
    # and its model explains its labels better: the all-rows EP evidence of the final model
    # (another basis, every row) against the same class's under the shared kernel
    gain = (clf.estimators_[2].log_marginal_likelihood_value_
            - plain.estimators_[2].log_marginal_likelihood_value_)
    assert gain > 0.25 * 4 * np.log(y.size)
    # the classes that keep the shared kernel are the fit's without the trial, exactly
    for k in (0, 1):
        a, b = clf.estimators_[k], plain.estimators_[k]
        np.testing.assert_array_equal(a.kernel_.theta, b.kernel_.theta)
        np.testing.assert_array_equal(a.basis_indices_, b.basis_indices_)
        np.testing.assert_array_equal(a.site_precision_, b.site_precision_)
        assert a.bias_ == b.bias_
    # the classes no longer share one kernel: kernel_ is scikit-learn's compound one
    assert isinstance(clf.kernel_, CompoundKernel) and not isinstance(plain.kernel_,
                                                                      CompoundKernel)
    assert np.mean(clf.predict(X) == y) > np.mean(plain.predict(X) == y)


def test_the_trial_charges_half_the_bic_for_the_class_s_hyperparameters():
    X, y = _stripes(n=400, seed=1)
    clf, log = _fit(X, y)
    found = _LINE.findall(log)
    assert len(found) == 3
    for k, kept, gain, charge in found:
        n_theta = 4  # amplitude and a length scale per feature (3)
        assert float(charge) == pytest.approx(0.25 * n_theta * np.log(y.size), abs=0.01)
        assert (kept == "kept") == (float(gain) > float(charge))
        assert clf.estimators_[int(k)]._own_kernel == (kept == "kept")


@pytest.mark.parametrize("params", [
    {"optimizer": None},
    # the kernel's hyperparameters fixed (the biases are still learned): nothing to own
    {"kernel": C(1.0, "fixed") * RBF(1.0, "fixed")},
])
def test_no_trial_with_fixed_hyperparameters(params):
    X, y = _stripes(n=200)
    clf, log = _fit(X, y, **params)
    assert "own kernel" not in log
    assert not any(est._own_kernel for est in clf.estimators_)
    assert not isinstance(clf.kernel_, CompoundKernel)


def test_on_row_partitions_the_classes_keep_the_in_memory_kernels():
    # above learning_rows the trial runs on the driver's selection rows, as in memory
    X, y = _stripes(n=500)
    params = {"random_state": 0, "max_basis": 30, "learning_rows": 300}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        reference = SparseGPClassifier(**params).fit(X, y)
        clf = SparseGPClassifier(**params)
        clf.classes_, clf.n_features_in_ = np.unique(y), X.shape[1]
        clf = fit_rows(clf, LocalRows(X, y, 120), clf.classes_)
    assert any(est._own_kernel for est in reference.estimators_)
    for got, want in zip(clf.estimators_, reference.estimators_, strict=True):
        assert got._own_kernel == want._own_kernel
        np.testing.assert_allclose(got.kernel_.theta, want.kernel_.theta, rtol=0, atol=1e-12)
        np.testing.assert_array_equal(got.basis_indices_, want.basis_indices_)
    np.testing.assert_allclose(clf.predict_proba(X), reference.predict_proba(X), rtol=0,
                               atol=1e-8)


def test_a_large_basis_is_screened_on_its_first_vectors(monkeypatch):
    # with a screen of 10 vectors (the basis holds 30): the classes that gain less than half
    # the charge there stop, the stripes' class goes on to its whole basis and keeps its own
    import skgpsparse.classification.multiclass._class_kernels as class_kernels

    X, y = _stripes()
    full, _ = _fit(X, y)
    monkeypatch.setattr(class_kernels, "SCREEN_BASIS", 10)
    clf, log = _fit(X, y)
    screened = re.findall(r"class (\d): own kernel not kept \(on its first 10 basis vectors: "
                          r"log evidence and prior ([-+][\d.]+) nats, charge ([\d.]+)", log)
    stopped = {int(k) for k, _, _ in screened}
    assert stopped and stopped <= {0, 1}
    assert all(float(gain) <= 0.5 * float(charge) for _, gain, charge in screened)
    went_on = {int(k) for k, _, _, _ in _LINE.findall(log)}
    assert went_on == {0, 1, 2} - stopped
    assert [est._own_kernel for est in clf.estimators_] == [False, False, True]
    # the screened classes' models are the unscreened fit's (neither keeps its own kernel)
    for k in stopped:
        np.testing.assert_array_equal(clf.estimators_[k].basis_indices_,
                                      full.estimators_[k].basis_indices_)
        np.testing.assert_array_equal(clf.estimators_[k].site_precision_,
                                      full.estimators_[k].site_precision_)
