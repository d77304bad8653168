"""scikit-learn's multi-class names (issue 48, deliverable 3): ``multi_class="one_vs_rest"``
(the independent fits) and ``"one_vs_one"`` (a binary model per pair of classes), and the
multi-class ``kernel_`` (a ``CompoundKernel`` of the binary models' kernels).

The references are independent of the code under test: binary ``SparseGPClassifier`` fits on
the rows of each pair, scikit-learn's own vote (``_ovr_decision_function``) over their
probabilities, and scikit-learn's ``GaussianProcessClassifier``.
"""

import warnings

import numpy as np
import pytest
from sklearn.datasets import make_blobs
from sklearn.gaussian_process import GaussianProcessClassifier
from sklearn.gaussian_process.kernels import RBF, CompoundKernel
from sklearn.gaussian_process.kernels import ConstantKernel as C
from sklearn.utils.multiclass import _ovr_decision_function

from skgpsparse import SparseGPClassifier


def _blobs(n=96, n_classes=4, std=2.0, seed=0):
    return make_blobs(n_samples=n, centers=n_classes, n_features=2, cluster_std=std,
                      random_state=seed)


def _fit(X, y, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return SparseGPClassifier(**{"max_basis": 12, "random_state": 0, **params}).fit(X, y)


def _pairs(n_classes):
    return [(i, j) for i in range(n_classes) for j in range(i + 1, n_classes)]


@pytest.mark.parametrize("posterior", ["auto", "basis"])
def test_one_vs_rest_is_the_independent_fit(posterior):
    X, y = _blobs(n=80, n_classes=3)
    params = {"posterior": posterior, "max_iter": 2}
    ovr = _fit(X, y, multi_class="one_vs_rest", **params)
    independent = _fit(X, y, multi_class="independent", **params)
    assert ovr.multi_class_ == independent.multi_class_ == "independent"
    np.testing.assert_array_equal(ovr.kernel_.theta, independent.kernel_.theta)
    np.testing.assert_array_equal(ovr.bias_, independent.bias_)
    np.testing.assert_array_equal(ovr.predict_proba(X), independent.predict_proba(X))


@pytest.mark.parametrize("n_classes", [3, 4])
def test_each_pair_is_the_binary_fit_on_the_rows_of_its_two_classes(n_classes):
    X, y = _blobs(n_classes=n_classes)
    labels = np.array(["ant", "bee", "cat", "dog"])[y]  # any labels: pairs of classes_
    clf = _fit(X, labels, multi_class="one_vs_one")
    assert clf.multi_class_ == "one_vs_one"
    assert len(clf.estimators_) == n_classes * (n_classes - 1) // 2
    # the pairs' seeds, drawn as the fit draws them (the default fit does not use them
    # below learning_rows; the basis posterior would)
    seeds = np.random.RandomState(0).randint(np.iinfo(np.int32).max, size=len(clf.estimators_))
    probabilities, predictions = [], []
    for k, (i, j) in enumerate(_pairs(n_classes)):
        rows = np.flatnonzero((y == i) | (y == j))
        binary = _fit(X[rows], labels[rows], random_state=seeds[k])
        model = clf.estimators_[k]
        np.testing.assert_array_equal(model.kernel_.theta, binary.kernel_.theta)
        assert model.bias_ == binary.bias_
        # basis indices of the training rows, the binary's of the pair's rows
        np.testing.assert_array_equal(clf.basis_indices_[k], rows[binary.basis_indices_])
        np.testing.assert_array_equal(X[clf.basis_indices_[k]], clf.basis_vectors_[k])
        p = binary.predict_proba(X)
        probabilities.append(p[:, 1])
        predictions.append(np.argmax(p, axis=1))
    # scikit-learn's OneVsOneClassifier vote, its confidences the probabilities (the GPC's)
    votes = _ovr_decision_function(np.column_stack(predictions),
                                   np.column_stack(probabilities), n_classes)
    np.testing.assert_allclose(clf.decision_function(X), votes, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(clf.predict(X), clf.classes_[np.argmax(votes, axis=1)])
    assert clf.score(X, labels) > 0.6  # chance: 1 / n_classes


def test_one_vs_one_has_no_probabilities_as_scikit_learns_gpc():
    X, y = _blobs(n=45, n_classes=3)
    theirs = GaussianProcessClassifier(multi_class="one_vs_one").fit(X, y)
    ours = _fit(X, y, multi_class="one_vs_one")
    for model in (theirs, ours):
        with pytest.raises(ValueError, match="one_vs_one multi-class mode does not support "
                                             "predicting probability estimates"):
            model.predict_proba(X)
    with pytest.raises(ValueError, match="does not support predicting probability"):
        ours.predict_log_proba(X)
    with pytest.raises(ValueError, match="only supported for binary classification"):
        ours.latent_mean_and_variance(X)
    # two classes: one binary model, with its probabilities (scikit-learn's too)
    two = y < 2
    binary = _fit(X[two], y[two], multi_class="one_vs_one")
    plain = _fit(X[two], y[two])
    np.testing.assert_array_equal(binary.predict_proba(X), plain.predict_proba(X))
    GaussianProcessClassifier(multi_class="one_vs_one").fit(X[two], y[two]).predict_proba(X)


def test_one_vs_one_predicts_as_scikit_learns_gpc_with_the_kernel_fixed():
    # the full basis (every pair's rows) and a fixed kernel: EP with a class-balance bias
    # against the Laplace approximation without one; the votes agree but for a few rows
    # near the boundaries
    X, y = _blobs(n=120, n_classes=4, std=1.5, seed=3)
    kernel = C(4.0) * RBF(2.0)
    theirs = GaussianProcessClassifier(kernel, optimizer=None, multi_class="one_vs_one")
    ours = _fit(X, y, kernel=kernel, optimizer=None, max_basis=120, multi_class="one_vs_one")
    X_test, _ = _blobs(n=400, n_classes=4, std=1.5, seed=3)
    agree = np.mean(theirs.fit(X, y).predict(X_test) == ours.predict(X_test))
    assert agree > 0.95, agree


@pytest.mark.parametrize("multi_class", ["independent", "one_vs_one"])
def test_kernel_is_scikit_learns_compound_kernel_of_the_binary_models(multi_class):
    X, y = _blobs(n=60, n_classes=3)
    clf = _fit(X, y, kernel=C(1.0) * RBF(1.0), multi_class=multi_class, max_iter=2)
    assert isinstance(clf.kernel_, CompoundKernel)
    assert all(a is b.kernel_ for a, b in zip(clf.kernel_.kernels, clf.estimators_))
    theta = np.concatenate([est.kernel_.theta for est in clf.estimators_])
    np.testing.assert_array_equal(clf.kernel_.theta, theta)
    assert clf.kernel_.bounds.shape == (theta.size, 2)
    # log_marginal_likelihood as scikit-learn's: the mean over the binary models, at the
    # compound kernel's theta or at one kernel's theta for every model
    values = [est.log_marginal_likelihood_value_ for est in clf.estimators_]
    assert clf.log_marginal_likelihood() == pytest.approx(np.mean(values), rel=1e-12)
    assert clf.log_marginal_likelihood(clf.kernel_.theta) == pytest.approx(
        np.mean(values), rel=1e-8)
    one = clf.estimators_[0].kernel_.theta
    at_one = [est.log_marginal_likelihood(one) for est in clf.estimators_]
    assert clf.log_marginal_likelihood(one) == pytest.approx(np.mean(at_one), rel=1e-12)
    # clone_kernel=False moves the compound kernel (the same objects) as scikit-learn's
    moved = np.log(np.arange(1.0, theta.size + 1))
    clf.log_marginal_likelihood(moved, clone_kernel=False)
    np.testing.assert_allclose(clf.kernel_.theta, moved, atol=1e-12)


def test_the_shared_fit_exposes_its_one_kernel():
    X, y = _blobs(n=60, n_classes=3)
    clf = _fit(X, y, kernel=C(1.0) * RBF(1.0), multi_class="shared", max_iter=2)
    assert not isinstance(clf.kernel_, CompoundKernel)
    assert clf.kernel_ is clf.estimators_[0].kernel_
    for est in clf.estimators_:
        np.testing.assert_array_equal(est.kernel_.theta, clf.kernel_.theta)
    # its theta is every class's: the evidence there is the fitted one
    assert clf.log_marginal_likelihood(clf.kernel_.theta) == pytest.approx(
        clf.log_marginal_likelihood(), rel=1e-8)
    clf.log_marginal_likelihood(np.log([2.0, 0.5]), clone_kernel=False)
    for est in clf.estimators_:
        np.testing.assert_allclose(est.kernel_.theta, np.log([2.0, 0.5]), atol=1e-12)


def test_one_vs_one_warm_start_and_stream():
    X, y = _blobs(n=90, n_classes=3)
    clf = _fit(X, y, multi_class="one_vs_one", warm_start=True, max_iter=2)
    first = [b.copy() for b in clf.basis_indices_]
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # the same classes and features: warm
        clf.fit(X, y)
    for k, basis in enumerate(clf.basis_indices_):
        np.testing.assert_array_equal(X[basis], clf.basis_vectors_[k])
        assert set(basis) & set(first[k])  # started from the previous basis
    # partial_fit: each pair takes the batch's rows of its two classes (none: unchanged)
    before = [est.latent_mean_and_variance(X)[0] for est in clf.estimators_]
    batch = y == 0  # pair (1, 2) sees no row of this batch
    clf.partial_fit(X[batch][:10], y[batch][:10])
    assert clf.n_samples_seen_ == 100
    assert [sites.size for sites in clf.site_precision_] == [10, 10, 0]
    after = [est.latent_mean_and_variance(X)[0] for est in clf.estimators_]
    np.testing.assert_array_equal(after[2], before[2])
    assert not np.allclose(after[0], before[0]) and not np.allclose(after[1], before[1])


def test_one_vs_one_streams_from_the_first_batch():
    X, y = _blobs(n=120, n_classes=3, std=1.0)
    clf = SparseGPClassifier(max_basis=8, max_iter=2, multi_class="one_vs_one",
                             stream_buffer=40)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for rows in np.array_split(np.arange(120), 4):
            clf.partial_fit(X[rows], y[rows], classes=[0, 1, 2])
    assert clf.n_samples_seen_ == 120 and len(clf.estimators_) == 3
    batch = _fit(X, y, max_basis=8, max_iter=2, multi_class="one_vs_one")
    assert clf.score(X, y) > batch.score(X, y) - 0.03  # 0.925 against 0.933


def test_one_vs_one_in_parallel_is_the_same_model():
    # the pairs fitted in worker processes come back without their rows: the evidence at
    # another theta still reads them
    X, y = _blobs(n=60, n_classes=3)
    serial = _fit(X, y, multi_class="one_vs_one", max_iter=2)
    parallel = _fit(X, y, multi_class="one_vs_one", max_iter=2, n_jobs=2)
    np.testing.assert_array_equal(parallel.decision_function(X), serial.decision_function(X))
    theta = serial.kernel_.theta + 0.1
    assert parallel.log_marginal_likelihood(theta) == serial.log_marginal_likelihood(theta)
