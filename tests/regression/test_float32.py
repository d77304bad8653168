"""A float32 input: single-precision scoring columns, a float64 model (issue #7)."""

import numpy as np
import pytest
from sklearn.gaussian_process.kernels import RBF, DotProduct, Matern
from sklearn.gaussian_process.kernels import ConstantKernel as C

import skgpsparse.regression._alternation as alternation
from skgpsparse import SparseGPRegressor
from skgpsparse.kernels._columns import KernelColumns
from skgpsparse.regression._state import RegressionState

KERNEL = C(1.5) * RBF(1.0)
S2 = 0.05


def _data(n=400, d=3, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.uniform(-3, 3, (n, d))
    y = np.sin(X[:, 0]) * np.cos(X[:, -1]) + 0.1 * rng.randn(n)
    return X.astype(np.float32), y


def _dense_model(X, y, basis, jitter, kernel=KERNEL, s2=S2):
    """Minimiser of the exchange paper's cost (2) on ``basis``, from dense float64 blocks."""
    X = X.astype(np.float64)
    Kp = kernel(X, X[basis])
    Q = kernel(X[basis]) + jitter * np.eye(len(basis))
    alpha = np.linalg.solve(Kp.T @ Kp + s2 * Q, Kp.T @ y)
    mu = y - Kp @ alpha
    return alpha, mu, 0.5 * mu @ mu + 0.5 * s2 * alpha @ Q @ alpha


def _dense_dmax(X, y, basis, J, jitter, kernel=KERNEL, s2=S2):
    """Keerthi & Chu's DMAX decrease ``1/2 g^2 / d`` of every candidate of ``J``."""
    X = X.astype(np.float64)
    if len(basis):
        alpha, mu, _ = _dense_model(X, y, basis, jitter, kernel, s2)
    else:
        alpha, mu = np.zeros(0), y
    K = kernel(X, X[J])
    g = K.T @ mu - s2 * (kernel(X[basis], X[J]).T @ alpha if len(basis) else 0.0)
    d = (K * K).sum(0) + s2 * (kernel.diag(X[J]) + jitter)
    return 0.5 * g**2 / d


# ---------------------------------------------------------------- kernel columns
@pytest.mark.parametrize("kernel", [RBF(0.7), C(2.0) * RBF([0.5, 2.0, 1.0]), RBF(1.3) * C(0.3)])
def test_float32_scoring_columns_are_close_to_float64(kernel):
    X, _ = _data(n=300)
    X = X + np.float32(50.0)  # centred before the inner products
    cols = KernelColumns(kernel, X, score_dtype=np.float32)
    assert cols.fast and cols.fast32
    J = np.array([4, 0, 133, 299])
    Z = cols.operand(J, np.float32)
    assert Z.dtype == np.float32
    K32 = cols.block(slice(10, 200), Z)
    assert K32.dtype == np.float32
    ref = kernel(X[10:200].astype(np.float64), X[J].astype(np.float64))
    # Relative error ~ eps32 (|s_x|^2 + |s_z|^2): here |s|^2 <= ~30 length scales squared.
    np.testing.assert_allclose(K32, ref, rtol=2e-5, atol=0)
    # The float64 columns of a float32 input are those of its float64 cast.
    np.testing.assert_allclose(
        cols(slice(None), J), kernel(X.astype(float), X[J].astype(float)), rtol=1e-12, atol=1e-14
    )


def test_float32_scoring_needs_float32_request_and_small_inputs():
    X, _ = _data(n=50)
    assert not KernelColumns(KERNEL, X).fast32  # default: float64 scoring
    assert not KernelColumns(Matern(1.0), X, score_dtype=np.float32).fast32
    X[0] = 60.0  # |s|^2 / 2 ~ 5e3 > 1e3: the float32 exponent would lose ~5e-4
    cols = KernelColumns(RBF(1.0), X, score_dtype=np.float32)
    assert cols.fast and not cols.fast32
    assert cols.operand([1, 2], np.float32).dtype == np.float64


# ---------------------------------------------------------------- the state
def test_state_of_a_float32_input_scores_in_float32_and_keeps_float64():
    X, y = _data()
    state = RegressionState(KERNEL, X, y, S2, max_basis=10)
    ref = RegressionState(KERNEL, X.astype(np.float64), y, S2, max_basis=10)
    assert state.score_dtype is np.float32 and ref.score_dtype is np.float64
    J = np.random.RandomState(1).choice(state.candidates(), 40, replace=False)
    for j in (5, 17, 250, 301):
        for s in (state, ref):
            s.append(j)
        # The model is float64, computed from the same values as for the float64 cast.
        for attr in ("alpha", "w", "sigma_diag", "q", "K_pT"):
            np.testing.assert_allclose(
                getattr(state, attr), getattr(ref, attr), rtol=1e-12, atol=1e-13, err_msg=attr
            )
        assert state.alpha.dtype == np.float64 and state._K.B.dtype == np.float64
        J = np.setdiff1d(J, state.basis)
        mp32 = state.decrease("matching_pursuit", J)
        mp64 = ref.decrease("matching_pursuit", J)
        dense = _dense_dmax(X, y, state.basis, J, state.jitter)
        np.testing.assert_allclose(mp64, dense, rtol=1e-9)
        # float32 columns: the scores agree to ~1e-5 of the largest one.
        np.testing.assert_allclose(mp32, dense, rtol=0, atol=1e-5 * dense.max())
        np.testing.assert_allclose(mp32, dense, rtol=1e-3, atol=1e-9 * dense.max())
        # The residual of the scoring pass is float64 and equals the dense one.
        assert state.residual.dtype == np.float64
        np.testing.assert_allclose(
            state.residual, _dense_model(X, y, state.basis, state.jitter)[1], atol=1e-10
        )
        # The exact criterion stays float64 (its Schur complement cancels).
        np.testing.assert_allclose(
            state.decrease("exact", J), ref.decrease("exact", J), rtol=1e-10
        )


@pytest.mark.parametrize("kernel", [Matern(1.2, nu=2.5), C(0.5) * DotProduct(0.3) + RBF(2.0)])
def test_other_kernels_of_a_float32_input_are_computed_in_float64(kernel):
    # No fast form: the kernel is called on float64 copies of the rows, so the state (and
    # its prior variances) equals the one of the float64 cast, scores included.
    X, y = _data(n=150)
    state = RegressionState(kernel, X, y, S2, max_basis=6, jitter=1e-6)
    ref = RegressionState(kernel, X.astype(np.float64), y, S2, max_basis=6, jitter=1e-6)
    np.testing.assert_array_equal(state.kdiag, ref.kdiag)
    J = np.arange(40, 70)
    for j in (3, 80, 120):
        state.append(j)
        ref.append(j)
    np.testing.assert_allclose(state.alpha, ref.alpha, rtol=1e-12)
    np.testing.assert_allclose(
        state.decrease("matching_pursuit", J), ref.decrease("matching_pursuit", J), rtol=1e-12
    )


def test_score_dtype_can_be_forced_and_is_checked():
    X, y = _data(n=100)
    state = RegressionState(KERNEL, X.astype(np.float64), y, S2, 5, score_dtype=np.float32)
    assert state._columns.fast32
    J = np.arange(20)
    np.testing.assert_allclose(
        state.decrease("matching_pursuit", J), _dense_dmax(X, y, [], J, state.jitter), rtol=1e-4
    )
    with pytest.raises(ValueError, match="score_dtype"):
        RegressionState(KERNEL, X, y, S2, 5, score_dtype=np.float16)


# ---------------------------------------------------------------- the estimator
def test_float32_input_is_not_copied_to_float64(monkeypatch):
    seen = []
    real = alternation.RegressionState

    def spy(kernel, X, *args, **kwargs):
        seen.append(X.dtype)
        return real(kernel, X, *args, **kwargs)

    monkeypatch.setattr(alternation, "RegressionState", spy)
    X, y = _data(n=200)
    model = SparseGPRegressor(
        KERNEL, noise_variance=S2, max_basis=10, optimizer=None, random_state=0
    ).fit(X, y)
    assert seen == [np.float32]
    assert model.basis_vectors_.dtype == np.float64
    np.testing.assert_array_equal(model.basis_vectors_, X[model.basis_indices_])


@pytest.mark.parametrize("n_exchange", [0, 10])
def test_float32_fit_matches_the_float64_fit(n_exchange):
    X, y = _data(n=600, seed=3)
    kw = {
        "noise_variance": S2,
        "max_basis": 25,
        "optimizer": None,
        "random_state": 0,
        "n_exchange": n_exchange,
    }
    m32 = SparseGPRegressor(KERNEL, **kw).fit(X, y)
    m64 = SparseGPRegressor(KERNEL, **kw).fit(X.astype(np.float64), y)
    # Same working sets (same random stream); the winners can differ only on near-ties.
    _, _, cost32 = _dense_model(X, y, m32.basis_indices_, m32._jitter_value)
    _, _, cost64 = _dense_model(X, y, m64.basis_indices_, m64._jitter_value)
    same = np.array_equal(m32.basis_indices_, m64.basis_indices_)
    assert same or abs(cost32 - cost64) <= 1e-3 * cost64
    # The fitted model is the float64 one of its basis: the dense minimiser of cost (2).
    alpha, _, cost = _dense_model(X, y, m32.basis_indices_, m32._jitter_value)
    np.testing.assert_allclose(m32.alpha_, alpha, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(m32.cost_curve_[-1], cost, rtol=1e-9)
    mean, std = m32.predict(X, return_std=True)
    assert np.all(np.isfinite(mean)) and np.all(np.isfinite(std)) and np.all(std >= 0)
    np.testing.assert_allclose(
        mean, KERNEL(X.astype(float), m32.basis_vectors_) @ alpha, rtol=1e-6, atol=1e-8
    )
    if same:
        np.testing.assert_allclose(m32.predict(X), m64.predict(X), rtol=1e-9, atol=1e-12)


# ---------------------------------------------------------------- block storage of K_p^T
def test_block_storage_in_many_blocks_matches_dense(monkeypatch):
    # Blocks of 64 rows (the last one partial), chunks of 256 requested: passes, deletions
    # and the float32 scores all work across block boundaries.
    import skgpsparse.regression._state as rs

    monkeypatch.setattr(rs, "_BLOCK_ROWS", 64)
    X, y = _data(n=301)
    state = RegressionState(KERNEL, X, y, S2, max_basis=8, n_threads=2)
    assert state._K.B.shape == (5, 8, 64)
    assert all(b - a <= 64 and a // 64 == (b - 1) // 64 for a, b in state._chunks(1, 1 << 30))
    for j in (7, 64, 200, 300, 13):
        state.append(j)
    state.delete(1)
    basis = state.basis.tolist()
    assert basis == [7, 200, 300, 13]
    K_ref = KERNEL(X[basis].astype(float), X.astype(float))
    np.testing.assert_allclose(state.K_pT, K_ref, rtol=1e-12, atol=1e-14)
    alpha, mu, cost = _dense_model(X, y, basis, state.jitter)
    np.testing.assert_allclose(state.alpha, alpha, rtol=1e-8)
    np.testing.assert_allclose(state.residual, mu, atol=1e-10)
    np.testing.assert_allclose(state.cost, cost, rtol=1e-10)
    J = np.setdiff1d(np.arange(0, 301, 7), basis)
    dense = _dense_dmax(X, y, basis, J, state.jitter)
    np.testing.assert_allclose(state.decrease("matching_pursuit", J), dense, rtol=1e-4)
    np.testing.assert_allclose(state.residual, mu, atol=1e-10)
