"""SparseGPClassifier(max_basis="auto"): the stopping rule of latent/learning/_basis_size.py."""

import warnings

import numpy as np
import pytest
from sklearn.datasets import make_moons
from sklearn.gaussian_process.kernels import RBF, ConstantKernel

from skgpsparse import SparseGPClassifier
from skgpsparse._auto_basis import AUTO_START, row_cap
from skgpsparse.classification._basis_size import auto_basis_cap
from skgpsparse.latent._model import fit_memory
from skgpsparse.latent.learning._basis_size import GAIN_PER_ROW


def _data(kind, n, seed=0):
    """Labels of a latent function of two inputs on [-3, 3]^2 plus probit noise."""
    rng = np.random.RandomState(seed)
    X = rng.uniform(-3, 3, (n, 2))
    f = {
        "constant": lambda X: np.full(len(X), 0.5),
        "linear": lambda X: X[:, 0] + 0.5 * X[:, 1],
        # a checkerboard of about 5 x 5 cells per unit square of the kernel's start
        "checkerboard": lambda X: 3 * np.sin(2.5 * X[:, 0]) * np.sin(2.5 * X[:, 1]),
    }[kind](X)
    return X, (f + 0.3 * rng.randn(n) > 0).astype(int)


def _fit(X, y, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # learned values at bounds, ConvergenceWarning
        params = dict({"max_basis": "auto", "random_state": 0}, **params)
        return SparseGPClassifier(**params).fit(X, y)


@pytest.mark.parametrize("kind", ["constant", "linear"])
def test_auto_keeps_the_stand_in_fit_on_a_boundary_that_needs_few_basis_vectors(kind):
    X, y = _data(kind, 800)
    model = _fit(X, y)
    assert model.n_basis_ == AUTO_START == len(model.basis_indices_)
    # the curve: the stand-in size, then the doubling that gained less than the threshold
    sizes, values = model.basis_size_curve_.T
    np.testing.assert_array_equal(sizes, [AUTO_START, 2 * AUTO_START])
    assert values[1] - values[0] < GAIN_PER_ROW
    # the model is the int fit at the stand-in size (its cost already paid, kept as it is)
    fixed = _fit(X, y, max_basis=AUTO_START)
    np.testing.assert_array_equal(model.basis_indices_, fixed.basis_indices_)
    np.testing.assert_array_equal(model.predict_proba(X), fixed.predict_proba(X))


def test_auto_grows_on_a_boundary_that_needs_many_basis_vectors():
    X, y = _data("checkerboard", 2000)
    model = _fit(X, y)
    sizes, values = model.basis_size_curve_.T
    assert model.n_basis_ >= 2 * AUTO_START and model.n_basis_ in sizes
    gains = np.diff(values)
    # every doubling kept gained at least the threshold, the last one less (or the cap)
    kept = list(sizes).index(model.n_basis_)
    assert np.all(gains[:kept] >= GAIN_PER_ROW)
    assert kept == sizes.size - 1 or gains[kept] < GAIN_PER_ROW
    # the rounds at the size chosen reach the int fit at that size (they start from the
    # stand-in's hyperparameters, it from the kernel given): its evidence and, on fresh rows,
    # its test NLP; a basis of 50 predicts far worse (the data need many)
    X_test, y_test = _data("checkerboard", 2000, seed=1)
    fixed = _fit(X, y, max_basis=int(model.n_basis_))
    small = _fit(X, y, max_basis=50)
    np.testing.assert_allclose(min(model.loss_curve_), min(fixed.loss_curve_), atol=2e-3)
    nlp = [-np.mean(m.predict_log_proba(X_test)[np.arange(y_test.size), y_test])
           for m in (model, fixed, small)]
    assert abs(nlp[0] - nlp[1]) < 0.005 and nlp[0] < nlp[2] - 0.02


def test_auto_with_fixed_hyperparameters_is_the_int_fit_at_the_size_chosen():
    # optimizer=None: the curve at the kernel given; its first value is minus the loss of the
    # fixed fit at the stand-in size (the EP evidence of that fit, computed by the rounds),
    # and the model is the int fit at the size chosen
    X, y = _data("checkerboard", 1200)
    kernel = ConstantKernel(4.0) * RBF(0.4)  # the checkerboard's scale: many vectors
    auto = _fit(X, y, optimizer=None, kernel=kernel)
    at_first = _fit(X, y, optimizer=None, max_basis=AUTO_START, kernel=kernel)
    np.testing.assert_allclose(auto.basis_size_curve_[0, 1], -at_first.loss_curve_[0],
                               rtol=1e-6)
    assert auto.n_basis_ > AUTO_START
    fixed = _fit(X, y, optimizer=None, max_basis=int(auto.n_basis_), kernel=kernel)
    np.testing.assert_array_equal(auto.basis_indices_, fixed.basis_indices_)
    # EP's fixed point to its tolerance (1e-6): the rounds start from the stand-in's sites
    np.testing.assert_allclose(auto.predict_proba(X), fixed.predict_proba(X), atol=1e-6)


def test_int_max_basis_has_no_curve_and_its_size():
    X, y = make_moons(300, noise=0.2, random_state=0)
    model = _fit(X, y, max_basis=30, max_iter=2)
    assert model.n_basis_ == 30 and model.basis_size_curve_ is None


def test_auto_cap_is_the_memory_budget_the_rows_and_800():
    assert row_cap(300) == 150 and row_cap(10**6) == 800 and row_cap(40) == 40

    def need(q):
        return fit_memory(10**5, 20, q, 3, True, 0, all_rows=True).total

    assert auto_basis_cap(10**5, 20, 3, True, 0, available=10**15) == 800
    budget = need(300)  # the memory of a fit at 300: the cap
    assert auto_basis_cap(10**5, 20, 3, True, 0, available=budget) == 300
    assert need(301) > budget


def test_each_class_chooses_its_own_size():
    # class 0 a linear boundary against the rest, classes 1 and 2 a checkerboard's cells
    X, y2 = _data("checkerboard", 2000)
    y = np.where(X[:, 0] + 0.5 * X[:, 1] < -2.5, 0, 1 + y2)
    for multi_class in ("shared", "independent"):
        model = _fit(X, y, multi_class=multi_class, max_iter=3)
        assert model.n_basis_.shape == (3,)
        assert [len(b) for b in model.basis_indices_] == list(model.n_basis_)
        assert [c[-1, 0] for c in model.basis_size_curve_] >= list(model.n_basis_)
        assert model.n_basis_[0] < model.n_basis_[1], multi_class


def test_verbose_prints_the_curve(capsys):
    X, y = _data("linear", 400)
    _fit(X, y, verbose=1)
    out = capsys.readouterr().out
    assert "max_basis='auto': basis 100, EP log evidence per row" in out
    assert "basis 200" in out and "gain" in out


def test_auto_under_the_basis_posterior_is_100():
    # the rule is the all-rows EP evidence: under posterior="basis" "auto" is the int 100
    X, y = _data("linear", 400)
    params = dict(posterior="basis", max_iter=2, random_state=0)
    auto = SparseGPClassifier(max_basis="auto", **params).fit(X, y)
    fixed = SparseGPClassifier(max_basis=100, **params).fit(X, y)
    assert auto.n_basis_ == 100 and auto.basis_size_curve_ is None
    np.testing.assert_array_equal(auto.predict_proba(X), fixed.predict_proba(X))


def test_auto_is_the_default():
    assert SparseGPClassifier().max_basis == "auto"


def test_bad_max_basis_string_names_the_parameter():
    X, y = _data("linear", 200)
    with pytest.raises(ValueError, match="max_basis"):
        SparseGPClassifier(max_basis="big").fit(X, y)


def test_partial_fit_with_auto_chooses_a_size_on_its_buffer():
    X, y = _data("checkerboard", 1200)
    model = SparseGPClassifier(max_basis="auto", random_state=0, max_iter=2,
                               stream_buffer=600)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for start in range(0, 1200, 300):
            model.partial_fit(X[start:start + 300], y[start:start + 300], classes=[0, 1])
    assert model.n_samples_seen_ == 1200
    assert model.n_basis_ == len(model.basis_indices_) <= row_cap(600)
    assert model.basis_size_curve_ is not None
    assert np.all(np.isfinite(model.predict_proba(X)))


def test_auto_does_not_modify_the_inputs():
    X, y = _data("linear", 300)
    X0, y0 = X.copy(), y.copy()
    _fit(X, y, max_iter=2)
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(y, y0)


def test_auto_with_warm_start_and_one_vs_one():
    # a warm start's previous basis starts the stand-in's first round (at 100), then the size is
    # chosen again; one vs one: each pair chooses on its two classes' rows
    X, y = _data("checkerboard", 1200)
    model = SparseGPClassifier(max_basis="auto", warm_start=True, random_state=0, max_iter=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        first = model.fit(X, y).n_basis_
        again = model.fit(X, y).n_basis_
    assert first == again == len(model.basis_indices_) > AUTO_START
    X3, y3 = np.r_[X, X + 7], np.r_[y, y + 2]
    pairs = _fit(X3, y3, multi_class="one_vs_one", max_iter=2)
    assert pairs.n_basis_.shape == (6,)
    assert all(len(b) == p <= row_cap(1200) for b, p in zip(pairs.basis_indices_,
                                                              pairs.n_basis_))


def test_auto_without_a_doubling_to_try_is_the_stand_in_fit():
    # 150 rows: half of them (the cap) is below the stand-in's 100, so no curve is computed
    # and the model is max_basis=100's, bit for bit (binary and the shared multi-class fit)
    X, y = _data("checkerboard", 150)
    y3 = np.where(X[:, 0] > 1.5, 2, y)
    for labels in (y, y3):
        auto = _fit(X, labels, max_iter=3)
        fixed = _fit(X, labels, max_iter=3, max_basis=AUTO_START)
        assert auto.basis_size_curve_ is None or all(c is None for c in auto.basis_size_curve_)
        np.testing.assert_array_equal(auto.predict_proba(X), fixed.predict_proba(X))
