"""The classifier's fit over row partitions (skgpsparse.rows._store.LocalRows), without a cluster.

The partitioned ADF state and NLP loss are the in-memory ones with every pass over the rows
cut at partition boundaries: the same basis and, up to the order of the additions, the same
numbers.
"""

import warnings

import numpy as np
import pytest
from _support.counting_rows import CountingRows
from sklearn.datasets import make_blobs, make_moons
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process.kernels import RBF
from sklearn.gaussian_process.kernels import ConstantKernel as C

from skgpsparse import SparseGPClassifier
from skgpsparse.classification.partitioned._fit import fit_rows
from skgpsparse.inference._adf import ADFState
from skgpsparse.inference._adf_partitioned import PartitionedADFState
from skgpsparse.latent.objectives._nlp_loss import nlp_loss
from skgpsparse.latent.objectives._nlp_loss_partitioned import partitioned_nlp_loss
from skgpsparse.likelihoods import Probit
from skgpsparse.rows._store import LocalRows, row_centre


def _fit_local(params, X, y, partition_rows):
    clf = SparseGPClassifier(**params)
    classes = np.unique(y)
    clf.classes_, clf.n_features_in_ = classes, X.shape[1]
    return fit_rows(clf, LocalRows(X, y, partition_rows), classes)


@pytest.mark.parametrize(
    ("data", "params"),
    [
        ("moons", {"optimizer": None}),
        ("moons", {"optimizer": None, "selection": "nlp"}),
        ("moons", {"optimizer": None, "selection": "entropy", "n_exchange": 3}),
        ("moons", {"optimizer": None, "selection": "info_gain"}),
        ("blobs", {"optimizer": None}),
        ("moons", {"max_iter": 3}),
        ("moons", {"selection": "nlp", "max_iter": 3}),
    ],
)
def test_partitioned_fit_equals_in_memory_fit(data, params):
    if data == "moons":
        X, y = make_moons(200, noise=0.25, random_state=0)
    else:
        X, y = make_blobs(150, centers=3, cluster_std=2.0, random_state=1)
    params = {"max_basis": 10, "random_state": 0, **params}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        reference = SparseGPClassifier(posterior="basis", **params).fit(X, y)
        clf = _fit_local({"posterior": "basis", **params}, X, y, partition_rows=60)
    for got, want in zip(np.atleast_2d(clf.basis_indices_), np.atleast_2d(reference.basis_indices_)):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(clf.predict_proba(X), reference.predict_proba(X), rtol=0,
                               atol=1e-10)
    np.testing.assert_allclose(clf.bias_, reference.bias_, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize(
    ("data", "n", "params"),
    [
        # every row gathered to the driver: the in-memory fit itself
        ("moons", 150, {"max_iter": 2}),
        ("blobs", 150, {"optimizer": None}),
        ("blobs", 150, {"max_iter": 1}),  # (the shared one-vs-rest fit)
        # learning on the in-memory fit's subsample, EP over every row on the partitions
        ("moons", 400, {"max_iter": 2, "learning_rows": 150}),
        ("blobs", 300, {"max_iter": 1, "learning_rows": 120}),  # (shared: each class's EP)
        ("blobs", 300, {"max_iter": 1, "learning_rows": 120, "multi_class": "independent"}),
        # fixed hyperparameters above learning_rows: selection and EP on the partitions
        ("moons", 400, {"optimizer": None, "learning_rows": 150}),
    ],
)
def test_partitioned_default_posterior_is_the_in_memory_model(data, n, params):
    # posterior="auto" (EP over every row) means the same model on partitions as in memory
    if data == "moons":
        X, y = make_moons(n, noise=0.3, random_state=0)
    else:
        X, y = make_blobs(n, centers=3, cluster_std=2.0, random_state=1)
    params = {"max_basis": 10, "random_state": 0, **params}
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # nothing to warn about: the same model
        warnings.simplefilter("ignore", ConvergenceWarning)  # (the amplitude at its bound)
        reference = SparseGPClassifier(**params).fit(X, y)
        clf = _fit_local(params, X, y, partition_rows=90)  # partitions of 90 rows
    for got, want in zip(np.atleast_2d(clf.basis_indices_),
                         np.atleast_2d(reference.basis_indices_)):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(clf.predict_proba(X), reference.predict_proba(X), rtol=0,
                               atol=1e-8)
    for got, want in zip(np.atleast_2d(clf.site_precision_),
                         np.atleast_2d(reference.site_precision_)):
        np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(clf.bias_, reference.bias_, rtol=1e-10)
    if data == "blobs":  # the class probabilities' combination, chosen on the same rows
        assert clf.logit_weight_ == pytest.approx(reference.logit_weight_, abs=1e-6)
    if data == "moons":  # (one blobs model stops at EP's sweep limit, where the in-memory
        # evidence is that of a second EP run from its sites)
        assert clf.log_marginal_likelihood_value_ == pytest.approx(
            reference.log_marginal_likelihood_value_, rel=1e-9
        )


@pytest.mark.parametrize("multi_class", ["auto", "shared"])
def test_partitioned_multiclass_fixed_fit_warns_that_it_is_the_independent_one(multi_class):
    # with fixed hyperparameters and the rows left on the partitions (more than
    # learning_rows) the shared fit, which would select on every row in memory, is the
    # independent fits on the partitions (the same kernel, biases and selection rule), and
    # says so
    X, y = make_blobs(150, centers=3, cluster_std=2.0, random_state=1)
    params = {"max_basis": 10, "random_state": 0, "optimizer": None, "learning_rows": 60}
    reference = SparseGPClassifier(multi_class="independent", **params).fit(X, y)
    with pytest.warns(UserWarning, match="with optimizer=None on a partitioned array"):
        clf = _fit_local({"multi_class": multi_class, **params}, X, y, partition_rows=90)
    assert clf.multi_class_ == "independent"
    np.testing.assert_allclose(clf.predict_proba(X), reference.predict_proba(X), rtol=0,
                               atol=1e-8)


def test_partitioned_shared_fit_needs_learning_rows():
    X, y = make_blobs(150, centers=3, cluster_std=2.0, random_state=1)
    with pytest.raises(ValueError, match="multi_class='shared' on a partitioned array needs "
                                         "learning_rows"):
        _fit_local({"max_basis": 8, "max_iter": 1, "learning_rows": None}, X, y, 60)


def test_partitioned_all_rows_learning_needs_learning_rows():
    X, y = make_moons(120, noise=0.25, random_state=0)
    with pytest.raises(ValueError, match="learning_rows=None"):
        _fit_local({"max_basis": 8, "max_iter": 1, "learning_rows": None}, X, y, 60)


def test_partitioned_state_tracks_in_memory_state():
    X, y01 = make_moons(120, noise=0.3, random_state=2)
    y = np.where(y01 == 1, 1.0, -1.0)
    kernel = C(2.0) * RBF(0.7)
    rows = LocalRows(X, y01, 35)
    state = ADFState(kernel, X, y, 0.1, 8, likelihood=Probit())
    part = PartitionedADFState(kernel, rows, 1, 0.1, 8, centre=row_centre(rows),
                               likelihood=Probit())
    J = np.array([4, 50, 90, 119])
    for j in (3, 70, 101, 36):
        for criterion in ("nlp", "nlp_all", "entropy", "info_gain"):
            np.testing.assert_allclose(part.score(criterion, J), state.score(criterion, J),
                                       rtol=1e-10)
        state.add(j)
        part.add(j)
    np.testing.assert_allclose(part.deletion_scores(), state.deletion_scores(), rtol=1e-10)
    state.remove(1)
    part.remove(1)
    np.testing.assert_array_equal(part.candidates(), state.candidates())
    np.testing.assert_allclose(part.sampling_weights(J), state.sampling_weights(J), rtol=1e-10)
    for all_points in (False, True):
        assert part.nlp(all_points=all_points) == pytest.approx(
            state.nlp(all_points=all_points), rel=1e-12)
    np.testing.assert_allclose(part.beta[: part.size], state.beta[: state.size], rtol=1e-10)


def test_partitioned_nlp_loss_equals_nlp_loss_and_its_gradient_finite_differences():
    X, y01 = make_moons(90, noise=0.3, random_state=3)
    y = np.where(y01 == 1, 1.0, -1.0)
    kernel = C(1.5) * RBF(np.array([0.8, 1.2]))
    basis = np.array([2, 40, 77, 15])
    mean, prec = np.array([0.5, -1.0, 1.2, 0.3]), np.array([1.0, 2.0, 0.5, 0.0])
    rows = LocalRows(X, y01, 25)
    loss, grad = partitioned_nlp_loss(kernel, rows, 1, 0.2, basis, mean, prec,
                                      eval_gradient=True, likelihood=Probit())
    ref_loss, ref_grad = nlp_loss(kernel, X, y, 0.2, basis, mean, prec, eval_gradient=True,
                                  likelihood=Probit())
    assert loss == pytest.approx(ref_loss, rel=1e-12)
    np.testing.assert_allclose(grad, ref_grad, rtol=1e-10, atol=1e-14)
    theta = np.append(kernel.theta, 0.2)
    h = 1e-6
    for i in range(len(theta)):
        up, down = theta.copy(), theta.copy()
        up[i] += h
        down[i] -= h
        values = [
            partitioned_nlp_loss(kernel.clone_with_theta(t[:-1]), rows, 1, t[-1], basis, mean,
                                 prec, likelihood=Probit())
            for t in (up, down)
        ]
        assert grad[i] == pytest.approx((values[0] - values[1]) / (2 * h), rel=1e-5, abs=1e-8)


def test_nlp_steps_fetch_the_next_working_set_with_the_add():
    # Each add also returns the partitions' values of the working set the next step will
    # draw (drawn ahead with a copy of the random state): two calls per step, the in-memory
    # draws and basis.
    X, y = make_moons(200, noise=0.25, random_state=0)
    params = {"max_basis": 10, "random_state": 0, "optimizer": None, "selection": "nlp",
              "n_exchange": 0, "posterior": "basis"}
    reference = SparseGPClassifier(**params).fit(X, y)
    clf = SparseGPClassifier(**params)
    clf.classes_, clf.n_features_in_ = np.unique(y), X.shape[1]
    rows = CountingRows(X, y, 60)
    fit_rows(clf, rows, clf.classes_)
    np.testing.assert_array_equal(clf.basis_indices_, reference.basis_indices_)
    np.testing.assert_allclose(clf.predict_proba(X), reference.predict_proba(X), rtol=0,
                               atol=1e-10)
    assert rows.calls["_c_score"] == 10 and rows.calls["_c_add_fetch"] == 10
    # values gathered: the first working set only (later ones came with the adds)
    assert rows.calls["_c_rows"] == 1
