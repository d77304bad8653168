"""``V = L^-1 K_uf`` recomputed by blocks in every pass (``inference/_row_columns.py``).

Above the storage budget the all-rows passes form each block of ``V`` again from the rows
instead of holding the ``p x n`` array. Forced on small data (the budget at 0), the blocks,
the EP sites and evidence, and whole fits equal those of the stored ``V``.
"""

import numpy as np
import pytest
from sklearn.gaussian_process.kernels import RBF
from sklearn.gaussian_process.kernels import ConstantKernel as C

from skgpsparse import SparseGPClassifier
from skgpsparse.inference import _row_columns
from skgpsparse.inference._ep import all_rows_ep, negative_log_evidence_all_rows
from skgpsparse.inference._row_columns import RecomputedColumns, StoredColumns, row_columns
from skgpsparse.inference._sparse_prior import SparsePrior, basis_cholesky


def _problem(n=700, d=2, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d)
    f = np.sin(2.0 * X[:, 0]) + 0.5 * X[:, 1]
    y = np.where(f + 0.3 * rng.randn(n) > 0.0, 1.0, -1.0)
    return X, y


@pytest.fixture
def recomputed(monkeypatch):
    """``V`` recomputed wherever it is larger than ``X`` (small blocks: several per pass)."""
    monkeypatch.setattr(_row_columns, "STORE_BYTES", 0)
    monkeypatch.setattr(_row_columns, "_BLOCK_ENTRIES", 1 << 11)


def test_the_budget_keeps_v_up_to_its_bytes_or_those_of_x(monkeypatch):
    X = np.zeros((1000, 20))
    assert _row_columns.stores_columns(1000, 100, X.nbytes)  # 0.8 MB, below the budget
    monkeypatch.setattr(_row_columns, "STORE_BYTES", 0)
    assert _row_columns.stores_columns(1000, 20, X.nbytes)  # as large as X
    assert not _row_columns.stores_columns(1000, 21, X.nbytes)


def test_recomputed_blocks_and_products_equal_the_stored_array(recomputed):
    X, _ = _problem(500)
    kernel, X_u = C(1.3) * RBF(0.8), X[::25]
    L = basis_cholesky(kernel, X_u)
    stored, norms_s = row_columns(kernel, X, X_u, L, store=True)
    again, norms_r = row_columns(kernel, X, X_u, L)
    assert isinstance(stored, StoredColumns) and isinstance(again, RecomputedColumns)
    # the dense formula: V = L^-1 K(X_u, X)
    V = np.linalg.solve(L, kernel(X_u, X))
    np.testing.assert_allclose(stored.array(), V, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(again.array(), V, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(norms_r, np.sum(V**2, axis=0), rtol=1e-12)
    np.testing.assert_array_equal(norms_r, norms_s)
    blocks = list(again.blocks())
    assert len(blocks) > 2  # several blocks per pass
    assert [J.start for J, _ in blocks] == [J.start for J, _ in stored.blocks()]
    for (J, V_J), (_, S_J) in zip(blocks, stored.blocks()):
        np.testing.assert_array_equal(V_J, S_J)  # the same arithmetic on the same block
    J = slice(37, 211)
    np.testing.assert_allclose(again.block(J), V[:, J], rtol=1e-10, atol=1e-12)
    x, w = np.random.RandomState(1).randn(X.shape[0]), np.random.RandomState(2).randn(20)
    np.testing.assert_allclose(again.dot(x), V @ x, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(again.rdot(w), V.T @ w, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("weighted", [False, True])
def test_ep_and_its_evidence_equal_the_stored_priors(weighted, monkeypatch):
    X, y = _problem()
    kernel, X_u = C(1.5) * RBF(0.7), X[::35]
    weights = np.random.RandomState(3).randint(1, 4, y.size).astype(float) if weighted else None
    out = []
    for budget in (1 << 30, 0):
        monkeypatch.setattr(_row_columns, "STORE_BYTES", budget)
        monkeypatch.setattr(_row_columns, "_BLOCK_ENTRIES", 1 << 11)
        prior = SparsePrior(kernel, X, X_u, weights=weights)
        assert prior.columns.stored == (budget > 0)
        tau, nu, (mu, s2, _), converged = all_rows_ep(prior, y, 0.1)
        value, grad, _ = negative_log_evidence_all_rows(
            SparsePrior(kernel, X, X_u, weights=weights), y, 0.1, eval_gradient=True
        )
        assert converged
        out.append((tau, nu, mu, s2, value, grad, prior.lam))
    for a, b in zip(*out):
        np.testing.assert_allclose(b, a, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("weighted", [False, True])
def test_a_fit_whose_all_rows_stage_recomputes_v_equals_the_stored_fit(weighted, monkeypatch):
    X, y = _problem(900, seed=4)
    weights = np.random.RandomState(5).uniform(0.5, 2.0, y.size) if weighted else None
    X_test = _problem(200, seed=6)[0]
    built = []

    class Counted(RecomputedColumns):
        def __init__(self, *args):
            super().__init__(*args)
            built.append(self.shape[1])

    monkeypatch.setattr(_row_columns, "RecomputedColumns", Counted)
    fits = []
    # learning on 300 rows, then EP on all 900 (the all-rows stage of a large fit); the
    # budget of 60 kB keeps V on the learning rows (15 x 300 x 8 bytes), not on all rows
    for budget in (1 << 30, 60_000):
        monkeypatch.setattr(_row_columns, "STORE_BYTES", budget)
        monkeypatch.setattr(_row_columns, "_BLOCK_ENTRIES", 1 << 11)
        model = SparseGPClassifier(max_basis=15, learning_rows=300, max_iter=2, random_state=0)
        fits.append(model.fit(X, y, sample_weight=weights))
    stored, again = fits
    assert built and set(built) == {900}  # the all-rows stage only, in the second fit
    np.testing.assert_array_equal(again.basis_indices_, stored.basis_indices_)
    np.testing.assert_allclose(again.site_precision_, stored.site_precision_, rtol=1e-10,
                               atol=1e-12)
    np.testing.assert_allclose(again.site_mean_, stored.site_mean_, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(again.predict_proba(X_test), stored.predict_proba(X_test),
                               rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(again.log_marginal_likelihood_value_,
                               stored.log_marginal_likelihood_value_, rtol=1e-10)


@pytest.mark.parametrize("weighted", [False, True])
def test_the_online_posterior_of_a_fit_sums_the_same_sites_by_blocks(weighted, monkeypatch):
    from skgpsparse.inference._online import OnlinePosterior

    X, y = _problem(600, seed=7)
    kernel, X_u = C(1.2) * RBF(0.9), X[::40]
    rng = np.random.RandomState(8)
    tau, nu = rng.uniform(0.1, 2.0, y.size), rng.randn(y.size)
    weights = rng.randint(1, 4, y.size).astype(float) if weighted else None
    posts = []
    for budget in (1 << 30, 0):
        monkeypatch.setattr(_row_columns, "STORE_BYTES", budget)
        monkeypatch.setattr(_row_columns, "_BLOCK_ENTRIES", 1 << 10)
        posts.append(OnlinePosterior.from_sites(kernel, X_u, 0.2, X, tau, nu, weights=weights))
    # the dense formula: B = I + V G V^T, eta = V a (g = c tau / h, a = c nu / h)
    prior = SparsePrior(kernel, X, X_u)
    h = 1.0 + prior.lam * tau
    c = 1.0 if weights is None else weights
    V = np.linalg.solve(prior.L, kernel(X_u, X))
    for post in posts:
        np.testing.assert_allclose(post.precision, np.eye(len(X_u)) + (V * (c * tau / h)) @ V.T,
                                   rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(post.eta, V @ (c * nu / h), rtol=1e-10, atol=1e-10)
