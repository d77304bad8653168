"""warm_start reuses the previous fit only for the same kernel, kind of input and width.

After ``set_params(kernel=...)`` with another class, other fixed parameters or bounds, or on
an ``X`` of another width or kind, a warm-started fit starts cold, with a
:class:`~skgpsparse._warm_start.WarmStartWarning` (a ``UserWarning``) that says why, and gives
the model a fresh fit gives (issue 48, point 6). With everything the same it warm-starts with
no such warning.
"""

import warnings

import numpy as np
import pytest
from _support.sequences import _LABELS, _SEQUENCES, _Y, SequenceKernel
from sklearn.gaussian_process.kernels import RBF, Matern
from sklearn.gaussian_process.kernels import ConstantKernel as C

from skgpsparse import SparseGPClassifier, SparseGPRegressor
from skgpsparse._warm_start import WarmStartWarning


def _data(classify, n_features=2, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.uniform(-2, 2, (60, n_features))
    y = np.sin(2 * X[:, 0]) + 0.1 * rng.randn(60)
    return X, ((y > 0).astype(int) if classify else y)


def _make(classify, **params):
    cls = SparseGPClassifier if classify else SparseGPRegressor
    return cls(**{"max_basis": 8, "max_iter": 2, "random_state": 0, **params})


def _fitted_values(est):
    return [est.kernel_.theta, est.basis_vectors_, est.predict(_data(False)[0][:10])]


_CHANGES = [
    ("kernel class", {"kernel": C(1.0) * Matern(1.0, nu=1.5)}, "the kernel changed"),
    ("fixed bounds", {"kernel": C(1.0) * RBF(1.0, length_scale_bounds="fixed")},
     "the kernel changed"),
    ("other bounds", {"kernel": C(1.0) * RBF(1.0, length_scale_bounds=(1e-2, 10.0))},
     "the kernel changed"),
    ("Matern's nu", {"kernel": C(1.0) * RBF(1.0) + C(1.0) * Matern(nu=2.5)},
     "the kernel changed"),
]


@pytest.mark.parametrize("classify", [False, True], ids=["regressor", "classifier"])
@pytest.mark.parametrize("what, change, why", _CHANGES, ids=[c[0] for c in _CHANGES])
def test_a_changed_kernel_fits_cold_with_a_warning(classify, what, change, why):
    X, y = _data(classify)
    est = _make(classify, kernel=C(1.0) * RBF(1.0), warm_start=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, y)
    est.set_params(**change)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(X, y)
    messages = [str(w.message) for w in caught if issubclass(w.category, WarmStartWarning)]
    assert len(messages) == 1 and why in messages[0] and "from scratch" in messages[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cold = _make(classify, **change).fit(X, y)
    for a, b in zip(_fitted_values(est), _fitted_values(cold)):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("classify", [False, True], ids=["regressor", "classifier"])
def test_the_same_kernel_and_inputs_warm_start_without_a_warning(classify):
    X, y = _data(classify)
    kernel = C(1.0) * RBF(1.0)
    est = _make(classify, kernel=kernel, warm_start=True, optimizer=None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, y)
    learned = est.kernel_
    # a new kernel object of the same structure (other start values) is the same model
    est.set_params(kernel=C(3.0) * RBF(0.5))
    with warnings.catch_warnings():
        warnings.simplefilter("error", WarmStartWarning)
        warnings.filterwarnings("ignore", message="(?!warm_start)")
        est.fit(X, y)
    # optimizer=None keeps the start: the previous fit's kernel, not the new start values
    np.testing.assert_allclose(est.kernel_.theta, learned.theta)


@pytest.mark.parametrize("classify", [False, True], ids=["regressor", "classifier"])
def test_another_width_fits_cold_with_a_warning(classify):
    X, y = _data(classify)
    est = _make(classify, warm_start=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, y)
    X3, _ = _data(classify, n_features=3)
    with pytest.warns(WarmStartWarning, match="the previous fit had 2 features, X has 3"):
        est.fit(X3, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cold = _make(classify).fit(X3, y)
    np.testing.assert_array_equal(est.basis_vectors_, cold.basis_vectors_)
    np.testing.assert_array_equal(est.kernel_.theta, cold.kernel_.theta)


@pytest.mark.parametrize("classify", [False, True], ids=["regressor", "classifier"])
def test_structured_inputs_fit_cold_with_a_warning(classify):
    # the basis of a kernel on structured inputs is row numbers of the previous data; numeric
    # rows after strings change the kind of input
    y = _LABELS if classify else _Y
    est = _make(classify, kernel=SequenceKernel(), warm_start=True, max_basis=12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(_SEQUENCES, y)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(_SEQUENCES[::-1], y[::-1])
    messages = [str(w.message) for w in caught if issubclass(w.category, WarmStartWarning)]
    assert len(messages) == 1 and "structured inputs" in messages[0]
    X, y_num = _data(classify)
    est.set_params(kernel=C(1.0) * RBF(1.0))
    with pytest.warns(WarmStartWarning, match="the kernel changed"):
        est.fit(X, y_num)


def test_another_multi_class_fits_cold_with_a_warning():
    # three classes give three binary models under one-vs-rest and under one-vs-one: the
    # previous scheme's kernels and biases are not the new one's start
    rng = np.random.RandomState(0)
    X = rng.uniform(-2, 2, (90, 2))
    y = np.digitize(X[:, 0] + 0.2 * rng.randn(90), [-0.7, 0.7])
    est = SparseGPClassifier(max_basis=8, max_iter=2, random_state=0, warm_start=True,
                             multi_class="one_vs_rest")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, y)
    est.set_params(multi_class="one_vs_one")
    with pytest.warns(WarmStartWarning, match="multi_class changed from 'one_vs_rest'"):
        est.fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cold = SparseGPClassifier(max_basis=8, max_iter=2, random_state=0,
                                  multi_class="one_vs_one").fit(X, y)
    for ours, theirs in zip(est.basis_vectors_, cold.basis_vectors_):
        np.testing.assert_array_equal(ours, theirs)
