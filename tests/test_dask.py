"""GridSearchCV over a dask.distributed LocalCluster through joblib's dask backend."""

import numpy as np
import pytest
from joblib import parallel_backend
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
