"""A row backend of the test's own: both estimators fit on it to the in-memory model.

The backend is defined here, not in the package: an array held as a list of in-memory row
chunks (:class:`Chunks`), its row store (:class:`ChunkRows`, one partition per chunk) and the
:class:`~skgpsparse.rows.RowBackend` that answers the estimators' questions about it. Once
registered, ``fit``, ``predict``, ``partial_fit`` and ``log_marginal_likelihood`` take it
with no package module changed: the extension ``rows/__init__.py`` describes.
"""

import warnings

import numpy as np
import pytest
from _support.same_model import assert_same_classifier, assert_same_regressor
from sklearn.exceptions import ConvergenceWarning

from skgpsparse import SparseGPClassifier, SparseGPRegressor
from skgpsparse.rows import (
    RowBackend,
    RowPartition,
    RowStore,
    backend_for,
    register_backend,
    unregister_backend,
)


class Chunks:
    """An array held as a list of in-memory row chunks (no ``__array__``: the estimators
    must not turn it into one numpy array)."""

    def __init__(self, chunks):
        self.chunks = [np.asarray(c) for c in chunks]

    @property
    def shape(self):
        return (sum(len(c) for c in self.chunks),) + self.chunks[0].shape[1:]

    @property
    def ndim(self):
        return self.chunks[0].ndim

    @property
    def dtype(self):
        return self.chunks[0].dtype

    def map(self, fn):
        return Chunks([fn(c) for c in self.chunks])

    def __sub__(self, other):
        return self.map(lambda c: c - other)

    def __truediv__(self, other):
        return self.map(lambda c: c / other)


class ChunkRows(RowStore):
    """One partition per chunk, in this process (as ``LocalRows``'s)."""

    opened = 0

    def __init__(self, X, y):
        self.offsets = np.cumsum([0] + [len(c) for c in X.chunks]).astype(np.intp)
        self.partitions = [
            RowPartition(x, yc, a) for x, yc, a in zip(X.chunks, y.chunks, self.offsets)
        ]
        self.n_features, self.dtype = X.shape[1], X.dtype
        self.target_shape = y.shape[1:]
        ChunkRows.opened += 1

    def _call(self, fn, args_per_partition):
        return [self.partitions[i].run(fn, *args) for i, args in args_per_partition.items()]


class ChunkBackend(RowBackend):
    name = "a list of chunks"

    def owns(self, a):
        return isinstance(a, Chunks)

    def validate(self, X, y, *, min_rows, dtypes, labels):
        if not isinstance(X, Chunks):
            raise TypeError("`X` must be a list of chunks when `y` is one.")
        if X.ndim != 2 or X.shape[0] < min_rows or X.shape[1] < 1:
            raise ValueError(f"`X` has shape {X.shape}.")
        X = X.map(lambda c: c if c.dtype in dtypes else c.astype(dtypes[0]))
        if not isinstance(y, Chunks):
            bounds = np.cumsum([len(c) for c in X.chunks])[:-1]
            y = Chunks(np.split(np.asarray(y), bounds))
        if not labels:
            y = y.map(lambda c: c.astype(np.float64))
        for name, a in (("X", X), ("y", None if labels else y)):
            if a is not None and not all(np.isfinite(c).all() for c in a.chunks):
                raise ValueError(f"`{name}` must contain only finite values.")
        classes = np.unique(np.concatenate([np.unique(c) for c in y.chunks])) if labels else None
        return X, y, classes

    def gather(self, a):
        return np.concatenate(a.chunks)

    def moments(self, y):
        whole = self.gather(y)
        return whole.mean(axis=0), whole.std(axis=0)

    def open(self, X, y):
        return ChunkRows(X, y)

    def map_rows(self, fn, X):
        parts = [fn(c) for c in X.chunks]
        if isinstance(parts[0], tuple):
            return tuple(Chunks(p) for p in zip(*parts))
        return Chunks(parts)


@pytest.fixture
def backend():
    registered = register_backend(ChunkBackend())
    yield registered
    unregister_backend(registered)


def _data(n=160, seed=0, size=50):
    rng = np.random.RandomState(seed)
    X = rng.uniform(-3, 3, (n, 2))
    y = np.sin(X[:, 0]) + 0.1 * rng.randn(n)
    chunks = [X[a:a + size] for a in range(0, n, size)]  # the last one shorter
    return X, y, Chunks(chunks)


def test_backend_for_finds_the_registered_backend_only(backend):
    X, y, Xc = _data()
    assert backend_for(X, y) is None
    assert backend_for(Xc) is backend
    assert backend_for(X, Chunks([y])) is backend
    unregister_backend(backend)
    assert backend_for(Xc) is None


@pytest.mark.parametrize(
    "params",
    [
        {"optimizer": None, "selection": "exact", "n_exchange": 2, "normalize_y": True},
        {"max_iter": 2, "refine_basis": 0},
        # learning on the in-memory fit's subsample, the posterior on the partitions
        {"max_iter": 2, "learning_rows": 100, "refine_basis": 0},
    ],
)
def test_regressor_fits_on_the_backend_to_the_in_memory_model(backend, params):
    X, y, Xc = _data()
    params = {"max_basis": 8, "random_state": 0, **params}
    reference = SparseGPRegressor(**params).fit(X, y)
    opened = ChunkRows.opened
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # the same model: nothing to warn about
        model = SparseGPRegressor(**params).fit(Xc, y)
    assert ChunkRows.opened > opened  # fitted on the backend's row store
    assert_same_regressor(model, reference, X)  # as the dask tests hold it
    # prediction on the backend's array: its own kind, partitioned as its rows
    mean, std = model.predict(Xc, return_std=True)
    assert isinstance(mean, Chunks) and [len(c) for c in mean.chunks] == [50, 50, 50, 10]
    np.testing.assert_allclose(backend.gather(std), reference.predict(X, return_std=True)[1],
                               rtol=0, atol=1e-8)
    theta = model.kernel_.theta
    assert model.log_marginal_likelihood(theta) == pytest.approx(
        reference.log_marginal_likelihood(reference.kernel_.theta), rel=1e-9
    )
    with pytest.raises(ValueError, match="return_cov=True is not available for a list of"):
        model.predict(Xc, return_cov=True)
    with pytest.raises(TypeError, match="got a list of chunks"):
        model.partial_fit(Xc, y)


@pytest.mark.parametrize(
    ("n_classes", "params"),
    [
        (2, {"optimizer": None}),
        (2, {"max_iter": 2}),
        (3, {"max_iter": 1}),
        (2, {"optimizer": None, "selection": "nlp", "posterior": "basis"}),
    ],
)
def test_classifier_fits_on_the_backend_to_the_in_memory_model(backend, n_classes, params):
    X, _, Xc = _data()
    labels = np.array(["a", "b", "c"])[np.digitize(X[:, 0], [-1.0, 1.0] if n_classes == 3
                                                   else [0.3])]
    params = {"max_basis": 8, "random_state": 0, **params}
    opened = ChunkRows.opened
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # the same model: nothing to warn about
        warnings.simplefilter("ignore", ConvergenceWarning)
        reference = SparseGPClassifier(**params).fit(X, labels)
        clf = SparseGPClassifier(**params).fit(Xc, labels)
    assert ChunkRows.opened > opened  # fitted on the backend's row store
    assert_same_classifier(clf, reference, X)  # as the dask tests hold it
    # every predict method on the backend's array: its own kind, equal to the in-memory one
    for name in ("predict_proba", "predict_log_proba", "decision_function", "predict"):
        out = getattr(clf, name)(Xc)
        assert isinstance(out, Chunks), name
        want = getattr(reference, name)(X)
        if name == "predict":
            np.testing.assert_array_equal(backend.gather(out), want)
        else:
            np.testing.assert_allclose(backend.gather(out), want, rtol=0, atol=1e-8)


def test_classifier_on_the_backend_names_it_in_its_messages(backend):
    X, _, Xc = _data(n=60)
    y = (X[:, 0] > 0).astype(int)
    with pytest.raises(ValueError, match="A fit on a list of chunks supports site_update="):
        SparseGPClassifier(site_update="optimize").fit(Xc, y)
    with pytest.raises(TypeError, match="partial_fit takes in-memory batches"):
        SparseGPClassifier(max_basis=5).partial_fit(Xc, y, classes=[0, 1])


def test_one_vs_one_is_refused_on_the_backend_and_predicts_on_it(backend):
    X, _, Xc = _data(n=90)
    labels = np.digitize(X[:, 0], [-1.0, 1.0])
    with pytest.raises(ValueError, match="multi_class='one_vs_one' is fitted in memory only"):
        SparseGPClassifier(max_basis=5, multi_class="one_vs_one").fit(Xc, labels)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf = SparseGPClassifier(max_basis=5, max_iter=1, multi_class="one_vs_one")
        clf.fit(X, labels)
    for name in ("decision_function", "predict"):
        np.testing.assert_array_equal(backend.gather(getattr(clf, name)(Xc)),
                                      getattr(clf, name)(X))
    with pytest.raises(ValueError, match="does not support predicting probability"):
        backend.gather(clf.predict_proba(Xc))


def _row_noise_args(n, seed=1):
    """Integer weights with zeros (rows removed) and relative noise variances in [0.5, 2]."""
    rng = np.random.RandomState(seed)
    return rng.randint(0, 4, n).astype(float), rng.uniform(0.5, 2.0, n)


@pytest.mark.parametrize("given", ["sample_weight", "noise_variance", "both"])
@pytest.mark.parametrize(
    "params",
    [
        {"max_iter": 2, "refine_basis": 0},  # every row gathered to the driver
        # learning on the in-memory fit's subsample of the rows of positive weight; the
        # whitened posterior and the evidence's constant on the partitions
        {"max_iter": 2, "learning_rows": 100, "hyperparameter_objective": "dtc"},
        {"max_iter": 2, "learning_rows": 100},
    ],
)
def test_regressor_with_row_noise_on_the_backend_is_the_in_memory_model(backend, given,
                                                                         params):
    X, y, Xc = _data()
    w, a = _row_noise_args(len(y))
    fit_kw = {} if given == "noise_variance" else {"sample_weight": w}
    params = {"max_basis": 8, "random_state": 0, **params}
    if given != "sample_weight":
        params["noise_variance"] = a
    reference = SparseGPRegressor(**params).fit(X, y, **fit_kw)
    w_given, a_given = w.copy(), a.copy()
    model = SparseGPRegressor(**params).fit(Xc, y, **fit_kw)
    np.testing.assert_array_equal(w, w_given)  # the user's arrays are not modified
    np.testing.assert_array_equal(a, a_given)
    assert_same_regressor(model, reference, X)
    assert model.log_marginal_likelihood_value_ == pytest.approx(
        reference.log_marginal_likelihood_value_, rel=1e-10)
    np.testing.assert_allclose(model.noise_variance_, reference.noise_variance_, rtol=1e-9)
    # the evidence (and its gradient) at theta on the partitions: the in-memory one's
    theta = reference.kernel_.theta
    got, got_grad = model.log_marginal_likelihood(theta, eval_gradient=True)
    want, want_grad = reference.log_marginal_likelihood(theta, eval_gradient=True)
    assert got == pytest.approx(want, rel=1e-10)
    np.testing.assert_allclose(got_grad, want_grad, rtol=1e-7, atol=1e-8)


def test_regressor_row_noise_on_the_backend_takes_the_weights_as_chunks(backend):
    X, y, Xc = _data()
    w, a = _row_noise_args(len(y))
    params = {"max_basis": 8, "random_state": 0, "max_iter": 2, "learning_rows": 100}
    reference = SparseGPRegressor(noise_variance=a, **params).fit(X, y, sample_weight=w)
    chunked = SparseGPRegressor(noise_variance=Chunks(np.split(a, [50, 100, 150])), **params)
    chunked.fit(Xc, y, sample_weight=Chunks(np.split(w, [50, 100, 150])))
    assert_same_regressor(chunked, reference, X)


def test_regressor_row_noise_on_the_backend_refuses_the_selection_on_partitions(backend):
    _, y, Xc = _data()
    w, a = _row_noise_args(len(y))
    for params in ({"optimizer": None}, {"learning_rows": None}):
        with pytest.raises(ValueError, match="sample_weight and a noise_variance array on a"):
            SparseGPRegressor(max_basis=8, **params).fit(Xc, y, sample_weight=w)
    with pytest.raises(ValueError, match=r"noise_variance as an array must have one entry"):
        SparseGPRegressor(max_basis=8, noise_variance=a[:-1]).fit(Xc, y)
    with pytest.raises(ValueError, match="sample_weight"):
        SparseGPRegressor(max_basis=8).fit(Xc, y, sample_weight=-w)
