"""sample_weight and class_weight of SparseGPClassifier against repeated and removed rows.

The independent computation is always the repeated rows: ``np.repeat(X, w)`` fitted, or the
all-rows EP run on them (:func:`~skgpsparse.inference._ep.all_rows_ep`) under a fitted model's
kernel, bias and basis. EP's tolerance on the sites is 1e-6 (``inference._ep._EP_TOL``), and
the fitted probabilities move by at most about that much between two runs stopped there.
"""

import warnings

import numpy as np
import pytest
from sklearn.gaussian_process.kernels import RBF
from sklearn.gaussian_process.kernels import ConstantKernel as C
from sklearn.utils.class_weight import compute_sample_weight

from skgpsparse import SparseGPClassifier
from skgpsparse.inference._ep import all_rows_ep, negative_log_evidence_all_rows
from skgpsparse.inference._sparse_prior import SparsePrior
from skgpsparse.latent.objectives._ep_evidence import AllRowsObjective


def _data(n=60, n_classes=2, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, 2)
    score = X[:, 0] + 0.5 * rng.randn(n)
    y = np.digitize(score, np.quantile(score, np.linspace(0, 1, n_classes + 1)[1:-1]))
    weights = rng.randint(1, 4, size=n)
    return X, y, weights


@pytest.mark.parametrize("prior", ["fitc", "dtc"])
def test_ep_evidence_and_gradient_equal_repeated_rows(prior):
    X, y, w = _data(40)
    y = np.where(y == 1, 1.0, -1.0)
    kernel, X_u = C(2.0) * RBF(1.3), X[:8]
    repeated = negative_log_evidence_all_rows(
        SparsePrior(kernel, np.repeat(X, w, axis=0), X_u, prior), np.repeat(y, w), 0.3,
        eval_gradient=True, tol=1e-10,
    )
    weighted = negative_log_evidence_all_rows(
        SparsePrior(kernel, X, X_u, prior, weights=w.astype(float)), y, 0.3,
        eval_gradient=True, tol=1e-10,
    )
    np.testing.assert_allclose(weighted[0], repeated[0], rtol=1e-10)
    np.testing.assert_allclose(weighted[1], repeated[1], rtol=1e-8, atol=1e-10)
    # every copy of a row has the row's site (the fixed point of the repeated rows)
    last_copy = np.cumsum(w) - 1
    for ours, theirs in zip(weighted[2], repeated[2]):
        np.testing.assert_allclose(ours, theirs[last_copy], rtol=1e-8, atol=1e-10)


def _repeated_proba(binary, X, y_pm, w, X_test):
    """P(y = +1) at ``X_test`` from EP over the repeated rows under ``binary``'s kernel, bias
    and basis: the posterior the weighted fit must equal."""
    prior = SparsePrior(binary.kernel_, np.repeat(X, w, axis=0), binary.basis_vectors_)
    tau, nu, _, _ = all_rows_ep(prior, np.repeat(y_pm, w), binary.bias_)
    from skgpsparse.latent._predictors import AllRowsPredictor

    predictor = AllRowsPredictor(binary.kernel_, binary.basis_vectors_, prior.X,
                                 np.repeat(y_pm, w), tau, nu, binary.bias_)
    mean, var = predictor.latent_mean_and_variance(X_test)
    return predictor.likelihood.predictive_probability(1.0, mean, var)


def _repeated_gradient(binary, X, y_pm, w):
    """Projected gradient of the repeated rows' EP evidence (per row) at the weighted fit's
    ``[theta, b]`` on its basis; at its optimum it vanishes."""
    objective = AllRowsObjective(binary.kernel_, np.repeat(X, w, axis=0), np.repeat(y_pm, w),
                                 binary.basis_vectors_, (None, None), tol=1e-9)
    theta = np.append(binary.kernel_.theta, binary.bias_)
    grad = objective(theta)[1]
    # the projected gradient: a hyperparameter at a bound need not be stationary
    bounds = binary.kernel_.bounds
    at_bound = np.isclose(theta[:-1], bounds[:, 0], atol=1e-6) | np.isclose(
        theta[:-1], bounds[:, 1], atol=1e-6)
    grad[:-1][at_bound] = 0.0
    return grad


@pytest.mark.parametrize("optimizer", [None, "fmin_l_bfgs_b"])
def test_binary_fit_equals_repeated_rows_on_its_basis(optimizer):
    X, y, w = _data(60)
    clf = SparseGPClassifier(C(1.0) * RBF(1.0), max_basis=12, optimizer=optimizer,
                             random_state=0).fit(X, y, sample_weight=w)
    binary, y_pm = clf._binary, np.where(y == 1, 1.0, -1.0)
    expected = _repeated_proba(binary, X, y_pm, w, X)
    np.testing.assert_allclose(clf.predict_proba(X)[:, 1], expected, atol=1e-5)
    if optimizer is not None:
        # the learned [theta, b] maximise the repeated rows' evidence on the basis: its
        # gradient there is at the level of L-BFGS-B's tolerance (1e-5 per row), far below
        # its size at the unweighted fit's hyperparameters
        grad = _repeated_gradient(binary, X, y_pm, w)
        assert np.max(np.abs(grad)) < 1e-4
        unweighted = SparseGPClassifier(C(1.0) * RBF(1.0), max_basis=12,
                                        random_state=0).fit(X, y)._binary
        unweighted.basis_vectors_ = binary.basis_vectors_
        assert np.max(np.abs(_repeated_gradient(unweighted, X, y_pm, w))) > 10 * np.max(
            np.abs(grad))


def _weighted_and_repeated(X, y, w, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # max_basis clipped; the selection runs out of rows
        weighted = SparseGPClassifier(random_state=0, **params).fit(X, y, sample_weight=w)
        repeated = SparseGPClassifier(random_state=0, **params).fit(
            np.repeat(X, w, axis=0), np.repeat(y, w))
    return weighted, repeated


def _thetas(clf):
    return [k.theta for k in (clf.kernels_ if hasattr(clf, "kernels_") else [clf.kernel_])]


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("optimizer", [None, "fmin_l_bfgs_b"])
def test_full_basis_fit_equals_repeated_fit(n_classes, optimizer):
    # every distinct row in the basis (max_basis = n): the repeated rows' selection never
    # takes a twin of a basis row, so both fits have the same basis and the same EP (the
    # copies' sites are equal at every sweep), and the learned kernel and biases agree to
    # the optimiser's rounding
    X, y, w = _data(30, n_classes=n_classes)
    weighted, repeated = _weighted_and_repeated(X, y, w, max_basis=30, optimizer=optimizer,
                                                max_iter=3)
    assert np.unique(np.concatenate([np.ravel(b) for b in np.atleast_1d(
        weighted.basis_indices_)])).size == 30
    X_test = np.random.RandomState(1).randn(50, 2)
    np.testing.assert_allclose(weighted.predict_proba(X_test), repeated.predict_proba(X_test),
                               atol=1e-6)
    np.testing.assert_allclose(_thetas(weighted), _thetas(repeated), atol=1e-5)
    np.testing.assert_allclose(weighted.bias_, repeated.bias_, atol=1e-5)
    np.testing.assert_allclose(weighted.log_marginal_likelihood_value_,
                               repeated.log_marginal_likelihood_value_, rtol=1e-6)


@pytest.mark.parametrize("seed", [3, 5])
def test_learned_sparse_fit_equals_repeated_fit(seed):
    # a sparse basis (15 of 80 distinct rows) with learned hyperparameters: the repeated
    # fit never selects a twin of a basis row, so both select alike and differ by rounding
    # (measured 1e-13 to 1e-10 in the probabilities, kernel and bias on these seeds); the
    # tolerance is EP's site tolerance (1e-6), which a rounding-tipped L-BFGS-B step
    # between two stopping points of EP could reach
    X, y, w = _data(80, seed=seed)
    weighted, repeated = _weighted_and_repeated(X, y, w, max_basis=15)
    np.testing.assert_allclose(weighted.predict_proba(X), repeated.predict_proba(X), atol=1e-6)
    np.testing.assert_allclose(weighted.kernel_.theta, repeated.kernel_.theta, atol=1e-6)
    np.testing.assert_allclose(weighted.bias_, repeated.bias_, atol=1e-6)


@pytest.mark.parametrize("multi_class", ["shared", "independent"])
def test_multiclass_fit_equals_repeated_rows_on_its_bases(multi_class):
    X, y, w = _data(60, n_classes=3)
    clf = SparseGPClassifier(max_basis=10, max_iter=2, multi_class=multi_class,
                             random_state=0).fit(X, y, sample_weight=w)
    for k, binary in enumerate(clf.estimators_):
        y_pm = np.where(y == k, 1.0, -1.0)
        expected = _repeated_proba(binary, X, y_pm, w, X)
        mean, var = binary.latent_mean_and_variance(X)
        got = binary.likelihood.predictive_probability(1.0, mean, var)
        np.testing.assert_allclose(got, expected, atol=1e-5)
        if multi_class == "independent":  # each class's own [theta, b] at its optimum
            assert np.max(np.abs(_repeated_gradient(binary, X, y_pm, w))) < 1e-4


def test_zero_weight_removes_the_row():
    X, y, w = _data(60)
    w[::4] = 0
    kept = w > 0
    for weights in (w, np.where(kept, 1, 0)):
        a = SparseGPClassifier(max_basis=10, max_iter=2, random_state=0).fit(
            X, y, sample_weight=weights)
        b = SparseGPClassifier(max_basis=10, max_iter=2, random_state=0).fit(
            X[kept], y[kept], sample_weight=weights[kept])
        np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))
    c = SparseGPClassifier(max_basis=10, max_iter=2, random_state=0).fit(X[kept], y[kept])
    np.testing.assert_array_equal(a.predict_proba(X), c.predict_proba(X))


def test_class_weight_balanced_and_dict_equal_sample_weight():
    X, y, _ = _data(60)
    y[:10] = 0  # unbalanced
    est = {"max_basis": 10, "max_iter": 2, "random_state": 0}
    balanced = SparseGPClassifier(class_weight="balanced", **est).fit(X, y)
    explicit = SparseGPClassifier(**est).fit(
        X, y, sample_weight=compute_sample_weight("balanced", y))
    np.testing.assert_array_equal(balanced.predict_proba(X), explicit.predict_proba(X))
    as_dict = SparseGPClassifier(class_weight={0: 3.0}, **est).fit(X, y)
    explicit = SparseGPClassifier(**est).fit(X, y, sample_weight=np.where(y == 0, 3.0, 1.0))
    np.testing.assert_array_equal(as_dict.predict_proba(X), explicit.predict_proba(X))
    # the weight moves the decision: class 0 gains probability everywhere
    plain = SparseGPClassifier(**est).fit(X, y)
    assert np.all(as_dict.predict_proba(X)[:, 0] > plain.predict_proba(X)[:, 0])


def test_class_weight_times_sample_weight():
    X, y, w = _data(40)
    est = {"max_basis": 8, "optimizer": None, "kernel": C(1.0) * RBF(1.0)}
    a = SparseGPClassifier(class_weight={1: 2.0}, **est).fit(X, y, sample_weight=w)
    b = SparseGPClassifier(**est).fit(X, y, sample_weight=w * np.where(y == 1, 2.0, 1.0))
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))


def test_bad_weights_and_unsupported_options():
    X, y, w = _data(30)
    clf = SparseGPClassifier(max_basis=5, optimizer=None)
    with pytest.raises(ValueError, match="sample_weight"):
        clf.fit(X, y, sample_weight=-w)
    with pytest.raises(ValueError, match="non-zero"):
        clf.fit(X, y, sample_weight=np.zeros(30))
    with pytest.raises(ValueError, match="sample_weight"):
        clf.fit(X, y, sample_weight=w[:-1])
    # partial_fit takes weights (test_partial_fit_weights), but not "balanced"
    with pytest.raises(ValueError, match="'balanced' is not supported by partial_fit"):
        SparseGPClassifier(max_basis=5, class_weight="balanced").partial_fit(X, y, classes=[0, 1])
    w_before = w.copy()
    clf.fit(X, y, sample_weight=w)
    np.testing.assert_array_equal(w, w_before)


def _fit_on_partitions(params, X, y, weights, partition_rows=40):
    from skgpsparse.classification.partitioned._fit import fit_rows
    from skgpsparse.rows._store import LocalRows

    clf = SparseGPClassifier(**params)
    classes = np.unique(y)
    clf.classes_, clf.n_features_in_ = classes, X.shape[1]
    return fit_rows(clf, LocalRows(X, y, partition_rows), classes, weights)


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("learning_rows", ["auto", 60])
def test_partitioned_fit_equals_in_memory_fit(n_classes, learning_rows):
    # "auto": every row gathered to the driver, the in-memory fit itself (the zero weights
    # dropped there); 60 of 150 rows: learning on the driver's subsample, EP over the
    # partitions with the rows' weights, the in-memory fit's to EP's rounding
    X, y, w = _data(150, n_classes=n_classes)
    w = w.astype(float)
    if learning_rows == "auto":
        w[::7] = 0.0
    params = {"max_basis": 10, "max_iter": 2, "random_state": 0, "learning_rows": learning_rows}
    in_memory = SparseGPClassifier(**params).fit(X, y, sample_weight=w)
    on_partitions = _fit_on_partitions(params, X, y, w)
    np.testing.assert_allclose(on_partitions.predict_proba(X), in_memory.predict_proba(X),
                               atol=1e-6)
    np.testing.assert_allclose(on_partitions.log_marginal_likelihood_value_,
                               in_memory.log_marginal_likelihood_value_, rtol=1e-6)


def test_partitioned_fit_refuses_what_it_cannot_weigh():
    X, y, w = _data(150)
    with pytest.raises(ValueError, match="optimizer=None on a partitioned array"):
        _fit_on_partitions({"max_basis": 5, "optimizer": None, "learning_rows": 60}, X, y,
                           w.astype(float))


def test_dask_array_weights_equal_in_memory():
    distributed = pytest.importorskip("distributed")
    da = pytest.importorskip("dask.array")
    X, y, w = _data(120)
    params = {"max_basis": 8, "max_iter": 2, "random_state": 0, "learning_rows": 50}
    in_memory = SparseGPClassifier(**params).fit(X, y, sample_weight=w)
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                       dashboard_address=None)
    with distributed.Client(cluster):
        clf = SparseGPClassifier(**params).fit(
            da.from_array(X, chunks=40), da.from_array(y, chunks=40),
            sample_weight=da.from_array(w, chunks=40))
        balanced = SparseGPClassifier(class_weight="balanced", **params).fit(
            da.from_array(X, chunks=40), da.from_array(y, chunks=40))
        with pytest.raises(ValueError, match="posterior='basis' on a partitioned array"):
            SparseGPClassifier(posterior="basis", max_basis=5).fit(
                da.from_array(X, chunks=40), da.from_array(y, chunks=40), sample_weight=w)
    cluster.close()
    np.testing.assert_allclose(clf.predict_proba(X), in_memory.predict_proba(X), atol=1e-6)
    explicit = SparseGPClassifier(**params).fit(
        X, y, sample_weight=compute_sample_weight("balanced", y))
    np.testing.assert_allclose(balanced.predict_proba(X), explicit.predict_proba(X), atol=1e-6)


def test_basis_posterior_weighted_sums_equal_repeated_rows():
    # posterior="basis": a row of weight c joins the basis with c times its one-copy site
    # precision, and every NLP sum counts its -log Z c times. An unweighted state over the
    # repeated rows, given the same basis sites, must give the same NLP_a (eq. (5)), deletion
    # scores and adaptive sampling mass; eq. (4) excludes the basis rows' copies there, so
    # it is compared with the basis rows at weight 1
    from skgpsparse.inference._adf import ADFState
    from skgpsparse.likelihoods import Probit

    X, y, w = _data(40)
    y = np.where(y == 1, 1.0, -1.0)
    w = w.astype(float)
    basis = [3, 17, 25]
    w[basis] = 1.0
    first = np.concatenate([[0], np.cumsum(w[:-1])]).astype(int)  # each row's first copy
    kernel, bias = C(1.5) * RBF(1.0), 0.2
    weighted = ADFState(kernel, X, y, bias, 5, likelihood=Probit(), weights=w)
    repeated = ADFState(kernel, np.repeat(X, w.astype(int), axis=0),
                        np.repeat(y, w.astype(int)), bias, 5, likelihood=Probit())
    for j in basis:
        weighted.add(j)
        k = int(weighted.size - 1)
        repeated.add(first[j], weighted.site_precision[k], weighted.site_mean[k])
    np.testing.assert_allclose(weighted.nlp(all_points=True), repeated.nlp(all_points=True),
                               rtol=1e-12)
    np.testing.assert_allclose(weighted.nlp(), repeated.nlp(), rtol=1e-12)
    np.testing.assert_allclose(weighted.deletion_scores(), repeated.deletion_scores(),
                               rtol=1e-10)
    rows = np.setdiff1d(np.arange(40), basis)
    mass = [repeated.sampling_weights(np.arange(f, f + int(c))).sum()
            for f, c in zip(first[rows], w[rows])]
    np.testing.assert_allclose(weighted.sampling_weights(rows), mass, rtol=1e-12)
    # an added row of weight 3: three times the one-copy moment-matched precision
    plain = ADFState(kernel, X, y, bias, 5, likelihood=Probit())
    for j in basis:
        plain.add(j)
    weighted.weights[8] = 3.0
    weighted.add(8)
    plain.add(8)
    np.testing.assert_allclose(weighted.site_precision[3], 3.0 * plain.site_precision[3])
    np.testing.assert_allclose(weighted.site_mean[3], plain.site_mean[3])


@pytest.mark.parametrize("eval_gradient", [False, True])
def test_nlp_loss_weights_equal_repeated_rows(eval_gradient):
    from skgpsparse.latent.objectives._nlp_loss import nlp_loss
    from skgpsparse.likelihoods import Probit

    X, y, w = _data(40)
    y = np.where(y == 1, 1.0, -1.0)
    basis = np.array([3, 17, 25])
    w[basis] = 1  # eq. (4) is over the non-basis rows: a basis row's copies would be outside
    first = np.concatenate([[0], np.cumsum(w[:-1])])
    args = (0.2, [-0.5, 1.0, 0.3], [2.0, 0.7, 1.1])
    kernel = C(1.5) * RBF(1.0)
    ours = nlp_loss(kernel, X, y, args[0], basis, *args[1:], likelihood=Probit(),
                    eval_gradient=eval_gradient, weights=w)
    theirs = nlp_loss(kernel, np.repeat(X, w, axis=0), np.repeat(y, w), args[0], first[basis],
                      *args[1:], likelihood=Probit(), eval_gradient=eval_gradient)
    if eval_gradient:
        np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-10)
        np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-9, atol=1e-12)
    else:
        np.testing.assert_allclose(ours, theirs, rtol=1e-10)


def test_basis_posterior_takes_weights():
    X, y, w = _data(60)
    params = {"posterior": "basis", "max_basis": 10, "max_iter": 2, "random_state": 0}
    weighted = SparseGPClassifier(**params).fit(X, y, sample_weight=w)
    assert weighted.score(X, y) > 0.8
    # integer weights as repeated rows of the non-basis points: the fitted NLP (eq. (4), the
    # objective at the kept model) is the weighted mean over the non-basis rows
    binary = weighted._binary
    rest = np.setdiff1d(np.arange(60), binary.basis_indices_)
    mean, var = binary.latent_mean_and_variance(X[rest])
    loss = -binary.likelihood.log_predictive(np.where(y[rest] == 1, 1.0, -1.0), mean, var)
    np.testing.assert_allclose(np.average(loss, weights=w[rest]), weighted.loss_curve_[
        int(np.argmin(weighted.loss_curve_))], rtol=1e-6)
    for bad in ({"hyperparameter_objective": "evidence"}, {"n_restarts": 1}):
        with pytest.raises(ValueError, match="posterior='basis' with"):
            SparseGPClassifier(**params, **bad).fit(X, y, sample_weight=w)


def test_grid_search_routes_sample_weight():
    import sklearn
    from sklearn.model_selection import GridSearchCV

    X, y, w = _data(60)
    est = SparseGPClassifier(C(1.0) * RBF(1.0), optimizer=None, max_basis=5)
    with sklearn.config_context(enable_metadata_routing=True):
        est = est.set_fit_request(sample_weight=True).set_score_request(sample_weight=True)
        search = GridSearchCV(est, {"max_basis": [5, 8]}, cv=3).fit(X, y, sample_weight=w)
        direct = SparseGPClassifier(C(1.0) * RBF(1.0), optimizer=None,
                                    **search.best_params_).fit(X, y, sample_weight=w)
    np.testing.assert_array_equal(search.best_estimator_.predict_proba(X),
                                  direct.predict_proba(X))
    # the weights reached the fits: the unweighted refit differs
    unweighted = SparseGPClassifier(C(1.0) * RBF(1.0), optimizer=None,
                                    **search.best_params_).fit(X, y)
    assert np.max(np.abs(unweighted.predict_proba(X) - direct.predict_proba(X))) > 1e-3


def test_basis_posterior_evidence_counts_the_basis_copies():
    # log_marginal_likelihood of a weighted basis-posterior fit: the EP evidence of the basis
    # labels with each repeated its row's weight times (the dense EP of GPML on the repeated
    # basis rows; the all-rows engine on the basis differs from it by the jitter, 1e-8)
    from skgpsparse.latent.objectives._basis_evidence import negative_log_evidence

    X, y, w = _data(60)
    clf = SparseGPClassifier(posterior="basis", max_basis=10, max_iter=2,
                             random_state=0).fit(X, y, sample_weight=w)
    binary = clf._binary
    c = w[binary.basis_indices_]
    theta = binary.kernel_.theta + 0.1
    dense = negative_log_evidence(binary.kernel_.clone_with_theta(theta),
                                  np.repeat(binary.basis_vectors_, c, axis=0),
                                  np.repeat(binary._basis_labels, c), binary.bias_,
                                  likelihood=binary.likelihood, eval_gradient=True)
    value, grad = clf.log_marginal_likelihood(theta, eval_gradient=True)
    np.testing.assert_allclose(value, -dense[0], rtol=1e-6)
    np.testing.assert_allclose(grad, -dense[1][:-1], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("multi_class", ["one_vs_rest", "one_vs_one"])
def test_scikit_learn_multi_class_fits_equal_repeated_rows(multi_class):
    # scikit-learn's multi_class values: every pair's or class's fit carries its rows' weights;
    # with every distinct row in the basis the repeated rows give the same models
    X, y, w = _data(30, n_classes=3)
    weighted, repeated = _weighted_and_repeated(X, y, w, max_basis=30, max_iter=2,
                                                multi_class=multi_class)
    # one_vs_one has no predict_proba (scikit-learn's): its pairs' margins
    method = "predict_proba" if multi_class == "one_vs_rest" else "decision_function"
    np.testing.assert_allclose(getattr(weighted, method)(X), getattr(repeated, method)(X),
                               atol=1e-6)
    np.testing.assert_allclose(_thetas(weighted), _thetas(repeated), atol=1e-5)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_basis_indices_index_the_x_given_with_zero_weights(n_classes):
    # rows of weight zero are dropped before the fit; basis_indices_ still index X (as the
    # regressor's do), so X[basis_indices_] are the basis vectors
    rng = np.random.RandomState(0)
    X = rng.randn(60, 2)
    y = (X[:, 0] > 0).astype(int) + (n_classes == 3) * (X[:, 1] > 1)
    weights = np.where(np.arange(60) % 3 == 0, 0.0, 1.0 + (np.arange(60) % 2))
    clf = SparseGPClassifier(max_basis=10, optimizer=None, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf.fit(X, y, sample_weight=weights)
    indices, vectors = clf.basis_indices_, clf.basis_vectors_
    for idx, vec in ([(indices, vectors)] if n_classes == 2 else zip(indices, vectors)):
        np.testing.assert_array_equal(X[idx], vec)
        assert np.all(weights[idx] > 0)
