"""GridSearchCV over a dask.distributed LocalCluster through joblib's dask backend."""

import time
import warnings

import numpy as np
import pytest
from _support.same_model import assert_same_classifier, assert_same_regressor
from joblib import parallel_backend
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process.kernels import RBF
from sklearn.gaussian_process.kernels import ConstantKernel as C
from sklearn.model_selection import GridSearchCV

from skgpsparse import SparseGPClassifier, SparseGPRegressor

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def client():
    # Threads in this process: starts in about a second and needs no pickling across processes
    # beyond what joblib's dask backend does anyway (it still scatters and serialises tasks).
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
    )
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


def _data(n=120, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.uniform(-3, 3, (n, 2))
    y = np.sin(X[:, 0]) + 0.1 * rng.randn(n)
    return X, y


def test_grid_search_on_dask_matches_sequential(client):
    X, y = _data()
    grid = {"max_basis": [5, 15], "noise_variance": [0.01, 0.1]}
    est = SparseGPRegressor(C(1.0) * RBF(1.0), optimizer=None, random_state=0)
    sequential = GridSearchCV(est, grid, cv=3, n_jobs=1).fit(X, y)
    with distributed.get_task_stream(client) as stream, parallel_backend("dask"):
        on_dask = GridSearchCV(est, grid, cv=3, n_jobs=-1).fit(X, y)
    # The same fits ran (fixed hyperparameters, fixed random_state): the same scores.
    np.testing.assert_allclose(
        on_dask.cv_results_["mean_test_score"], sequential.cv_results_["mean_test_score"]
    )
    assert on_dask.best_params_ == sequential.best_params_
    assert on_dask.best_params_["max_basis"] == 15
    # The fits ran as tasks on the cluster (4 candidates x 3 folds, batched by joblib).
    assert len(stream.data) >= 1


def test_one_vs_rest_classifier_fits_on_dask(client):
    X, _ = _data(n=90, seed=1)
    y = np.digitize(X[:, 0], [-1.0, 1.0])  # three classes
    clf = SparseGPClassifier(C(1.0) * RBF(1.0), max_basis=10, optimizer=None, random_state=0)
    reference = clf.fit(X, y).predict_proba(X)
    with distributed.get_task_stream(client) as stream, parallel_backend("dask"):
        proba = clf.set_params(n_jobs=2).fit(X, y).predict_proba(X)
    np.testing.assert_allclose(proba, reference, rtol=1e-10, atol=1e-12)
    assert proba.shape == (90, 3)
    assert len(stream.data) >= 1  # the one-vs-rest fits ran on the cluster


# ---------------------------------------------------------------- one fit over the cluster
da = pytest.importorskip("dask.array")


@pytest.fixture
def no_driver_compute(monkeypatch):
    """Make any conversion of a dask array to numpy on the driver fail during the test.

    A fit that gathered the rows on the driver (as validate_data's np.asarray would) raises;
    the row chunks reach the workers' actors through the scheduler, never through __array__.
    """

    def refuse(self, *args, **kwargs):
        raise AssertionError("a dask array was converted to numpy on the driver")

    monkeypatch.setattr(da.Array, "__array__", refuse)


def _actors_released(client, timeout=10.0):
    """Whether the fit's row actors leave the cluster (``client.cancel`` is asynchronous:
    the scheduler forgets them a moment after the fit returns)."""
    deadline = time.monotonic() + timeout
    while any("RowPartition" in str(k) for k in client.who_has()):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _dask_data(n=240, seed=0, chunk=80):
    X, y = _data(n, seed)
    X = np.column_stack([X, np.cos(X[:, 0] * X[:, 1])])
    return X, y, da.from_array(X, chunks=(chunk, 3)), da.from_array(y, chunks=chunk)


@pytest.mark.parametrize(
    "params",
    [
        {"optimizer": None},
        {"optimizer": None, "selection": "exact", "n_exchange": 3, "normalize_y": True},
        {"max_iter": 3, "refine_basis": 0},
        # the default constructor: learned on the rows gathered to the driver, refined
        {},
        # learning on the in-memory fit's random subsample; posterior and calibration on
        # the partitions (normalize_y's moments then summed over the chunks: other rounding,
        # which the refinement's L-BFGS path can amplify, so the targets are kept here)
        {"learning_rows": 150},
    ],
)
def test_regressor_dask_fit_equals_in_memory_fit(client, no_driver_compute, params):
    X, y, Xd, yd = _dask_data()
    params = dict(max_basis=12, random_state=0, **params)
    reference = SparseGPRegressor(**params).fit(X, y)
    with distributed.get_task_stream(client) as stream, warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # the same model: nothing to warn about
        model = SparseGPRegressor(**params).fit(Xd, yd)
    assert_same_regressor(model, reference, X)
    # the row chunks were computed on the workers (one task per chunk of X and of y at least)
    assert len(stream.data) >= 3
    # the actors are released with the fit
    assert _actors_released(client)
    lml = model.log_marginal_likelihood(model.kernel_.theta)
    assert lml == pytest.approx(reference.log_marginal_likelihood(reference.kernel_.theta),
                                rel=1e-9)


def test_regressor_dask_predictions_are_lazy_row_chunked_and_equal(client, no_driver_compute):
    X, y, _Xd, _yd = _dask_data()
    model = SparseGPRegressor(C(1.0) * RBF(1.0), max_basis=10, optimizer=None,
                              random_state=0, normalize_y=True).fit(X, y)
    X_test = _dask_data(150, seed=3)[0]
    Xt = da.from_array(X_test, chunks=(40, 3))
    mean = model.predict(Xt)
    mean2, std = model.predict(Xt, return_std=True)
    for out in (mean, mean2, std):
        assert isinstance(out, da.Array)
        assert out.chunks == (Xt.chunks[0],)
    ref_mean, ref_std = model.predict(X_test, return_std=True)
    np.testing.assert_allclose(mean.compute(), ref_mean, rtol=0, atol=1e-12)
    got_mean, got_std = da.compute(mean2, std)
    np.testing.assert_allclose(got_mean, ref_mean, rtol=0, atol=1e-12)
    np.testing.assert_allclose(got_std, ref_std, rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="return_cov"):
        model.predict(Xt, return_cov=True)


def test_regressor_dask_fit_rejects_bad_input(client):
    X, _y, Xd, yd = _dask_data()
    with pytest.raises(ValueError, match="`y` must have shape"):
        SparseGPRegressor(optimizer=None).fit(Xd, yd[:-1])
    bad = da.from_array(np.where(np.arange(240)[:, None] == 7, np.nan, X), chunks=(80, 3))
    with pytest.raises(ValueError, match="`X` must contain only finite"):
        SparseGPRegressor(optimizer=None).fit(bad, yd)
    with pytest.raises(TypeError, match="`X` must be a dask array"):
        SparseGPRegressor(optimizer=None).fit(X, yd)



@pytest.mark.parametrize(
    ("n_classes", "params"),
    [
        # the default posterior ("auto": EP over every row), fixed and learned
        (2, {"optimizer": None}),
        (2, {"max_iter": 3}),
        (3, {"max_iter": 1}),
        # learning on the in-memory fit's subsample, EP over every row on the workers
        (2, {"max_iter": 2, "learning_rows": 150}),
        # three classes: the shared fit learned and selected on that subsample, each
        # class's EP on the workers
        (3, {"max_iter": 1, "learning_rows": 150}),
        # the papers' ADF posterior on the basis rows
        (3, {"optimizer": None, "selection": "nlp", "posterior": "basis"}),
    ],
)
def test_classifier_dask_fit_equals_in_memory_fit(client, no_driver_compute, n_classes, params):
    X, _, Xd, _ = _dask_data(n=210, chunk=70)
    y = np.digitize(X[:, 0], [-1.0, 1.0] if n_classes == 3 else [0.3])
    labels = np.array(["a", "b", "c"])[y]  # string labels: the classes_ come from dask
    params = {"max_basis": 10, "random_state": 0, **params}
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # the same model: nothing to warn about
        warnings.simplefilter("ignore", ConvergenceWarning)
        reference = SparseGPClassifier(**params).fit(X, labels)
        clf = SparseGPClassifier(**params).fit(Xd, da.from_array(labels, chunks=70))
    assert_same_classifier(clf, reference, X)
    assert _actors_released(client)


def test_classifier_dask_fit_keeps_the_in_memory_fit_s_own_class_kernels(client,
                                                                        no_driver_compute):
    # three classes, one on stripes across feature 0: that class keeps its own kernel in the
    # shared fit (multiclass._class_kernels); on a dask array above learning_rows the trial
    # runs on the driver's selection rows, so the decisions and the models are the in-memory
    # ones
    rng = np.random.RandomState(0)
    X = rng.uniform(-3, 3, size=(420, 3))
    y = np.where(np.sin(4 * X[:, 0]) > 0.5, 2, np.where(X[:, 1] < 0, 0, 1))
    params = {"max_basis": 20, "random_state": 0, "learning_rows": 300}
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # the same model: nothing to warn about
        warnings.simplefilter("ignore", ConvergenceWarning)
        reference = SparseGPClassifier(**params).fit(X, y)
        clf = SparseGPClassifier(**params).fit(da.from_array(X, chunks=(140, 3)),
                                               da.from_array(y, chunks=140))
    own = [est._own_kernel for est in reference.estimators_]
    assert any(own) and not all(own)
    assert [est._own_kernel for est in clf.estimators_] == own
    assert_same_classifier(clf, reference, X)
    assert _actors_released(client)


def test_classifier_dask_predictions_are_lazy_row_chunked_and_equal(client, no_driver_compute):
    X, _, _, _ = _dask_data(n=150)
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    clf = SparseGPClassifier(max_basis=8, optimizer=None, random_state=0).fit(X, y)
    X_test = _dask_data(130, seed=4)[0]
    Xt = da.from_array(X_test, chunks=(50, 3))
    outputs = {
        "predict_proba": clf.predict_proba(Xt),
        "decision_function": clf.decision_function(Xt),
        "predict": clf.predict(Xt),
        "predict_log_proba": clf.predict_log_proba(Xt),
    }
    for name, out in outputs.items():
        assert isinstance(out, da.Array), name
        assert out.chunks[0] == Xt.chunks[0], name
        np.testing.assert_allclose(out.compute(), getattr(clf, name)(X_test), rtol=0,
                                   atol=1e-12)


def test_classifier_dask_fit_rejects_unsupported_settings(client):
    X, _, Xd, _ = _dask_data(n=90, chunk=30)
    yd = da.from_array((X[:, 0] > 0).astype(int), chunks=30)
    with pytest.raises(ValueError, match="site_update='moment_matching' only"):
        SparseGPClassifier(site_update="optimize").fit(Xd, yd)
    with pytest.raises(ValueError, match="2 or more distinct classes"):
        SparseGPClassifier().fit(Xd, da.zeros(90, chunks=30))


def test_regressor_dask_fit_with_two_targets_a_numpy_y_and_vfe(client, no_driver_compute):
    X, y, Xd, _ = _dask_data()
    Y = np.column_stack([y, np.cos(X[:, 1])])  # a numpy y: chunked like X's rows
    params = {"kernel": C(1.0) * RBF(1.0), "max_basis": 10, "random_state": 0, "max_iter": 2,
              "normalize_y": True}  # the default objective and refinement
    reference = SparseGPRegressor(**params).fit(X, Y)
    model = SparseGPRegressor(**params).fit(Xd, Y)
    np.testing.assert_array_equal(model.basis_indices_, reference.basis_indices_)
    mean, std = model.predict(Xd, return_std=True)
    assert mean.shape == (240, 2) and mean.chunks == (Xd.chunks[0], (2,))
    ref_mean, ref_std = reference.predict(X, return_std=True)
    np.testing.assert_allclose(mean.compute(), ref_mean, rtol=0, atol=1e-10)
    np.testing.assert_allclose(std.compute(), ref_std, rtol=0, atol=1e-10)


def test_dask_fit_skips_empty_chunks_and_names_unknown_chunk_sizes(client):
    X, y, Xd, yd = _dask_data(n=120, chunk=40)
    Xe = Xd.rechunk(((40, 0, 80), (3,)))  # a partition without rows
    ye = yd.rechunk(((40, 0, 80),))
    assert 0 in Xe.chunks[0]
    params = {"kernel": C(1.0) * RBF(1.0), "max_basis": 8, "optimizer": None, "random_state": 0}
    model = SparseGPRegressor(**params).fit(Xe, ye)
    reference = SparseGPRegressor(**params).fit(X, y)
    np.testing.assert_array_equal(model.basis_indices_, reference.basis_indices_)
    unknown = Xd[Xd[:, 0] > -10]  # a boolean mask leaves the row chunks' sizes unknown
    with pytest.raises(ValueError, match="unknown chunk sizes"):
        SparseGPRegressor(**params).fit(unknown, yd)


@pytest.mark.parametrize(
    "params",
    [
        {"max_iter": 2},  # every row gathered to the driver: the in-memory fit
        # learning on the in-memory fit's subsample; the whitened posterior on the partitions
        {"max_iter": 2, "learning_rows": 150},
    ],
)
def test_regressor_dask_fit_with_weights_and_row_noise_equals_in_memory_fit(
        client, no_driver_compute, params):
    X, y, Xd, yd = _dask_data()
    rng = np.random.RandomState(3)
    w = rng.randint(0, 4, len(y)).astype(float)  # zeros: rows removed
    a = rng.uniform(0.5, 2.0, len(y))
    params = dict(max_basis=12, random_state=0, **params)
    reference = SparseGPRegressor(noise_variance=a, **params).fit(X, y, sample_weight=w)
    # the weights and the noise as dask arrays chunked as X's rows
    model = SparseGPRegressor(noise_variance=da.from_array(a, chunks=80), **params)
    model.fit(Xd, yd, sample_weight=da.from_array(w, chunks=80))
    assert_same_regressor(model, reference, X)
    assert model.log_marginal_likelihood_value_ == pytest.approx(
        reference.log_marginal_likelihood_value_, rel=1e-10)
    assert _actors_released(client)
    # numpy arrays of length n, split to the partitions, give the same model
    numpy_given = SparseGPRegressor(noise_variance=a, **params).fit(Xd, yd, sample_weight=w)
    assert_same_regressor(numpy_given, reference, X)


@pytest.mark.parametrize("likelihood", ["poisson", "student_t"])
def test_non_gaussian_regressor_on_dask_is_the_in_memory_model(client, likelihood):
    # above learning_rows: learned on the in-memory fit's subsample gathered to the driver,
    # EP over every row on the partitions
    rng = np.random.RandomState(0)
    X = rng.uniform(-3, 3, (900, 2))
    f = np.sin(X[:, 0]) + 0.5 * X[:, 1]
    y = (rng.poisson(np.exp(f)).astype(float) if likelihood == "poisson"
         else f + 0.1 * rng.standard_t(3, 900))
    kw = dict(likelihood=likelihood, max_basis=20, learning_rows=300, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        memory = SparseGPRegressor(**kw).fit(X, y)
        on_dask = SparseGPRegressor(**kw).fit(da.from_array(X, chunks=(300, 2)),
                                              da.from_array(y, chunks=300))
    np.testing.assert_array_equal(on_dask.basis_indices_, memory.basis_indices_)
    np.testing.assert_allclose(on_dask.kernel_.theta, memory.kernel_.theta, rtol=1e-9)
    # the Student-t's basis inputs refined on the same 300 rows (refine_basis="auto"), from
    # the partitions' sites of those rows
    assert on_dask.n_refine_iter_ == memory.n_refine_iter_
    assert (memory.n_refine_iter_ > 0) == (likelihood == "student_t")
    np.testing.assert_allclose(on_dask.basis_vectors_, memory.basis_vectors_, rtol=1e-9)
    # the likelihood's learned parameters (the Student-t's scale) are the in-memory ones, and
    # the partitions' EP ran under them
    np.testing.assert_allclose(on_dask.likelihood_.theta, memory.likelihood_.theta, rtol=1e-9)
    if likelihood == "student_t":  # learned: away from its start, half the robust spread
        start = 0.5 * memory._y_train_std
        assert abs(np.log(memory.likelihood_.scale / start)) > 0.1
        assert on_dask._latent.likelihood.scale == memory._latent.likelihood.scale
    # Poisson (log-concave): the same EP steps, to rounding. Student-t: its negative sites make
    # the in-memory EP halve steps the partitioned driver takes whole, so the two reach the
    # same fixed point along other paths, each to EP's tolerance on the sites (1e-6)
    tol = dict(rtol=1e-8) if likelihood == "poisson" else dict(rtol=0, atol=1e-6)
    for a, b in zip(on_dask.predict(X, return_std=True), memory.predict(X, return_std=True)):
        np.testing.assert_allclose(a, b, **tol)


@pytest.mark.parametrize("params", [{"optimizer": None}, {"refine_basis": 0, "max_iter": 2}])
def test_regressor_auto_basis_chooses_the_same_size_on_dask(client, no_driver_compute, params):
    # max_basis="auto" on partitions (fixed hyperparameters: the selection and its stopping
    # rule on the partitions; learned: on the rows gathered to the driver) and in memory
    rng = np.random.RandomState(0)
    X = rng.uniform(-3, 3, (480, 2))
    y = np.sin(3 * X[:, 0]) * np.sin(3 * X[:, 1]) + 0.05 * rng.randn(480)
    Xd, yd = da.from_array(X, chunks=(160, 2)), da.from_array(y, chunks=160)
    params = dict(max_basis="auto", random_state=0, **params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        reference = SparseGPRegressor(**params).fit(X, y)
        model = SparseGPRegressor(**params).fit(Xd, yd)
    assert model.n_basis_ == reference.n_basis_ > 50
    np.testing.assert_allclose(model.basis_size_curve_, reference.basis_size_curve_,
                               rtol=1e-8)
    assert_same_regressor(model, reference, X)


@pytest.mark.parametrize(
    "params",
    [{"max_iter": 2}, {"max_iter": 2, "learning_rows": 900}, {"optimizer": None}],
    ids=["gathered", "learning-subsample", "fixed"],
)
def test_classifier_auto_basis_chooses_the_same_size_on_dask(client, no_driver_compute, params):
    # max_basis="auto" on partitions: the size is chosen where learning runs, on the rows
    # gathered to the driver (every row, or the in-memory fit's learning subsample)
    rng = np.random.RandomState(0)
    X = rng.uniform(-3, 3, (1200, 2))
    y = (3 * np.sin(2 * X[:, 0]) * np.sin(2 * X[:, 1]) + 0.3 * rng.randn(1200) > 0)
    Xd, yd = da.from_array(X, chunks=(400, 2)), da.from_array(y.astype(int), chunks=400)
    params = dict(max_basis="auto", random_state=0, **params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        reference = SparseGPClassifier(**params).fit(X, y.astype(int))
        clf = SparseGPClassifier(**params).fit(Xd, yd)
    assert clf.n_basis_ == reference.n_basis_ > 50
    np.testing.assert_allclose(clf.basis_size_curve_, reference.basis_size_curve_, rtol=1e-8)
    assert_same_classifier(clf, reference, X)


def test_classifier_auto_basis_on_dask_with_a_selection_on_the_partitions_warns(client):
    # fixed hyperparameters, more rows than learning gathers: the selection runs on the
    # partitions, no size is chosen, and the model is max_basis=100's (with a warning)
    X = np.random.RandomState(0).uniform(-3, 3, (300, 2))
    Xd, yd = da.from_array(X, chunks=(100, 2)), da.from_array((X[:, 0] > 0) * 1, chunks=100)
    params = dict(optimizer=None, learning_rows=150, random_state=0)
    with pytest.warns(UserWarning, match="max_basis='auto' with optimizer=None"):
        clf = SparseGPClassifier(max_basis="auto", **params).fit(Xd, yd)
    fixed = SparseGPClassifier(max_basis=100, **params).fit(Xd, yd)
    assert clf.basis_size_curve_ is None
    np.testing.assert_array_equal(clf.predict_proba(X), fixed.predict_proba(X))
