"""Tests of SparseGPRegressor and its incremental state against dense computations."""

import warnings

import numpy as np
import pytest
from _support.threads import blas_thread_counts, record_blas_threads
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize_scalar
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, Matern
from sklearn.gaussian_process.kernels import ConstantKernel as C
from threadpoolctl import threadpool_limits

import skgpsparse.regression._scoring as scoring
import skgpsparse.regression._state as rs
from skgpsparse.regression._dtc import dtc_log_marginal_likelihood
from skgpsparse.regression._estimator import SparseGPRegressor
from skgpsparse.regression._state import RegressionState
from skgpsparse.selection import GreedySelector

KERNEL = C(1.5) * RBF(1.0)
S2 = 0.05


def _data(n=50, d=2, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.uniform(-3, 3, (n, d))
    y = np.sin(X[:, 0]) * np.cos(X[:, -1]) + 0.1 * rng.randn(n)
    return X, y


def _dense(X, y, basis, jitter, kernel=KERNEL, s2=S2):
    """From-scratch dense minimiser of cost (2) on ``basis``."""
    K = kernel(X)
    basis = list(basis)
    Kp = K[:, basis]
    Q = K[np.ix_(basis, basis)] + jitter * np.eye(len(basis))
    Sigma = np.linalg.inv(Kp.T @ Kp + s2 * Q)
    alpha = Sigma @ Kp.T @ y
    mu = y - Kp @ alpha
    cost = 0.5 * mu @ mu + 0.5 * s2 * alpha @ Q @ alpha
    q = np.diag(K) - np.einsum("ij,ji->i", Kp, np.linalg.solve(Q, Kp.T))
    return {"alpha": alpha, "cost": cost, "D": np.diag(Sigma), "mu": mu, "q": q}


def _assert_matches_dense(state, X, y, **kw):
    ref = _dense(X, y, state.basis, state.jitter, **kw)
    np.testing.assert_allclose(state.alpha, ref["alpha"], rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(state.cost, ref["cost"], rtol=1e-9)
    np.testing.assert_allclose(state.sigma_diag, ref["D"], rtol=1e-7)
    np.testing.assert_allclose(state.residual, ref["mu"], atol=1e-9)
    np.testing.assert_allclose(state.q, np.clip(ref["q"], 0, None), atol=1e-9)


def _state(X, y, p_max=20):
    return RegressionState(KERNEL, X, y, S2, p_max)


# ---------------------------------------------------------------------------- the state
def test_append_matches_dense():
    X, y = _data()
    state = _state(X, y)
    for j in (3, 7, 11, 20, 5, 40, 41):
        assert state.append(j)
        _assert_matches_dense(state, X, y)
    assert state.basis.tolist() == [3, 7, 11, 20, 5, 40, 41]


def test_delete_then_readd_restores_state():
    X, y = _data()
    state = _state(X, y)
    for j in (3, 7, 11, 20, 5):
        state.append(j)
    j = state.delete(1)
    assert j == 7 and 7 in state.candidates()
    _assert_matches_dense(state, X, y)
    state.append(7)
    fresh = _state(X, y)
    for i in state.basis:
        fresh.append(i)
    for attr in ("alpha", "residual", "q", "sigma_diag"):
        np.testing.assert_allclose(getattr(state, attr), getattr(fresh, attr), atol=1e-9)
    np.testing.assert_allclose(state.L, fresh.L, atol=1e-9)
    np.testing.assert_allclose(state.R, fresh.R, atol=1e-9)
    np.testing.assert_allclose(state.V, fresh.V, atol=1e-9)
    assert state.cost == pytest.approx(fresh.cost, rel=1e-10)


@settings(max_examples=8, deadline=None)
@given(st.lists(st.integers(0, 10**6), min_size=1, max_size=25), st.integers(0, 100))
def test_random_appends_and_deletions_match_dense(ops, seed):
    X, y = _data(n=30, seed=seed % 5)
    state = _state(X, y, p_max=8)
    rng = np.random.RandomState(seed)
    for op in ops:
        if state.n_basis == 0 or (op % 3 and state.n_basis < state.p_max):
            state.append(rng.choice(state.candidates()))
        else:
            state.delete(op % state.n_basis)
    if state.n_basis:
        _assert_matches_dense(state, X, y)


def test_state_log_marginal_likelihood_is_eq_8_17():
    X, y = _data()
    state = _state(X, y)
    for j in (3, 7, 11, 20):
        state.append(j)
    state.delete(1)
    lml = dtc_log_marginal_likelihood(KERNEL, X, y, X[state.basis], S2, jitter=state.jitter)
    assert state.log_marginal_likelihood() == pytest.approx(lml, rel=1e-10)


def test_deletion_score_is_the_cost_increase_eq4():
    X, y = _data()
    state = _state(X, y)
    for j in (3, 7, 11, 20, 5, 40):
        state.append(j)
    scores = state.deletion_scores()
    basis = state.basis.tolist()
    for pos in range(len(basis)):
        rest = basis[:pos] + basis[pos + 1 :]
        increased = _dense(X, y, rest, state.jitter)["cost"]
        assert increased == pytest.approx(state.cost + scores[pos], rel=1e-9)


def _loaded_state():
    X, y = _data(n=60)
    state = _state(X, y)
    for j in (3, 7, 11, 20, 5):
        state.append(j)
    return X, y, state


def test_exact_criterion_is_the_true_cost_decrease():
    X, y, state = _loaded_state()
    J = state.candidates()
    scores = state.score("exact", J)
    basis = state.basis.tolist()
    brute = [_dense(X, y, basis + [j], state.jitter)["cost"] - state.cost for j in J]
    np.testing.assert_allclose(scores, brute, rtol=1e-7, atol=1e-10)


def test_matching_pursuit_criterion_optimises_only_the_new_weight():
    X, y, state = _loaded_state()
    J = state.candidates()
    scores = state.score("matching_pursuit", J)
    K = KERNEL(X)
    basis = state.basis.tolist()
    Kp, Q = K[:, basis], K[np.ix_(basis, basis)] + state.jitter * np.eye(len(basis))
    alpha = state.alpha

    def cost(a_all, basis_all):
        Kb = K[:, basis_all]
        Qb = K[np.ix_(basis_all, basis_all)] + state.jitter * np.eye(len(basis_all))
        r = y - Kb @ a_all
        return 0.5 * r @ r + 0.5 * S2 * a_all @ Qb @ a_all

    assert cost(alpha, basis) == pytest.approx(
        0.5 * (y - Kp @ alpha) @ (y - Kp @ alpha) + 0.5 * S2 * alpha @ Q @ alpha
    )
    for j, score in zip(J[::7], scores[::7]):
        res = minimize_scalar(lambda a, j=j: cost(np.append(alpha, a), basis + [j]))
        assert score == pytest.approx(res.fun - state.cost, rel=1e-6, abs=1e-10)


def test_info_gain_criterion_is_the_kl_of_the_residual_update():
    X, y, state = _loaded_state()
    J = state.candidates()
    scores = state.score("info_gain", J)
    ref = _dense(X, y, state.basis, state.jitter)
    q, mu = ref["q"][J], ref["mu"][J]
    # Posterior of r_j ~ N(0, q_j) after observing mu_j with noise S2, KL(new || old).
    v = 1.0 / (1.0 / q + 1.0 / S2)
    m = v * mu / S2
    kl = 0.5 * (v / q + m**2 / q - 1.0 + np.log(q / v))
    np.testing.assert_allclose(scores, -kl, rtol=1e-6)


def test_unknown_criterion_raises():
    _X, _y, state = _loaded_state()
    with pytest.raises(ValueError, match="criterion"):
        state.score("nlp", state.candidates())


def test_duplicate_point_is_marked_redundant_or_stable():
    X, y = _data(n=20)
    X = np.vstack([X, X[:5]])
    y = np.concatenate([y, y[:5]])
    state = _state(X, y, p_max=25)
    for j in range(25):
        state.append(j)
    assert np.all(np.isfinite(state.alpha))
    assert np.all(np.isfinite(state.sigma_diag))


# ---------------------------------------------------------------------------- the estimator
def _full_basis_pair(normalize_y=False, n=30):
    X, y = _data(n=n)
    y = 3.0 * y + 2.0
    kw = {"noise_variance": S2, "optimizer": None, "normalize_y": normalize_y}
    sparse = SparseGPRegressor(KERNEL, max_basis=n, selection="random", random_state=0, **kw)
    full = GaussianProcessRegressor(KERNEL, alpha=S2, optimizer=None, normalize_y=normalize_y)
    return X, sparse.fit(X, y), full.fit(X, y)


@pytest.mark.parametrize("normalize_y", [False, True])
def test_all_points_in_basis_equals_full_gp(normalize_y):
    _X, sparse, full = _full_basis_pair(normalize_y)
    Xt = np.random.RandomState(1).uniform(-4, 4, (40, 2))
    mean, std = sparse.predict(Xt, return_std=True)
    mean_ref, std_ref = full.predict(Xt, return_std=True)
    np.testing.assert_allclose(mean, mean_ref, atol=1e-6)
    np.testing.assert_allclose(std, std_ref, atol=1e-6)
    _, cov = sparse.predict(Xt, return_cov=True)
    _, cov_ref = full.predict(Xt, return_cov=True)
    np.testing.assert_allclose(cov, cov_ref, atol=1e-6)


def test_variance_returns_to_prior_far_from_data():
    X, y = _data(n=200)
    model = SparseGPRegressor(KERNEL, max_basis=20, optimizer=None, random_state=0).fit(X, y)
    far = np.array([[50.0, 50.0], [-80.0, 10.0]])
    mean, std = model.predict(far, return_std=True)
    np.testing.assert_allclose(std, np.sqrt(1.5), rtol=1e-10)
    np.testing.assert_allclose(mean, 0.0, atol=1e-12)
    near_std = model.predict(model.basis_vectors_, return_std=True)[1]
    assert np.all(near_std < 0.3)


def test_return_std_and_cov_exclusive():
    X, y = _data()
    model = SparseGPRegressor(max_basis=5, optimizer=None).fit(X, y)
    with pytest.raises(RuntimeError):
        model.predict(X, return_std=True, return_cov=True)


def test_fitted_attributes_and_basis_size():
    X, y = _data(n=100)
    model = SparseGPRegressor(
        KERNEL, max_basis=12, optimizer=None, random_state=0, hyperparameter_objective="dtc",
    ).fit(X, y)
    assert model.basis_indices_.shape == (12,)
    assert len(set(model.basis_indices_.tolist())) == 12
    np.testing.assert_array_equal(model.basis_vectors_, X[model.basis_indices_])
    assert model.alpha_.shape == (12,)
    assert model.cost_curve_.shape == (12,)
    assert np.all(np.diff(model.cost_curve_) < 0)  # forward steps decrease cost (2)
    # The mean is k(x, X_u) alpha_.
    np.testing.assert_allclose(
        model.predict(X[:7]), KERNEL(X[:7], model.basis_vectors_) @ model.alpha_
    )
    lml = dtc_log_marginal_likelihood(KERNEL, X, y, model.basis_vectors_, 1e-2, jitter=1e-8 * 1.5)
    assert model.log_marginal_likelihood_value_ == pytest.approx(lml, rel=1e-10)
    assert model.log_marginal_likelihood() == model.log_marginal_likelihood_value_


def test_selection_strategies_beat_random_on_cost():
    X, y = _data(n=300)
    costs = {}
    for selection in ("random", "exact", "matching_pursuit", "info_gain"):
        model = SparseGPRegressor(
            KERNEL, max_basis=15, optimizer=None, selection=selection, random_state=0
        ).fit(X, y)
        costs[selection] = model.cost_curve_[-1]
    for selection in ("exact", "matching_pursuit", "info_gain"):
        assert costs[selection] < costs["random"]


def test_selector_objects_and_weighted_sampling():
    X, y = _data(n=200)
    selector = GreedySelector("matching_pursuit", working_set_size=5, sampling="weighted")
    model = SparseGPRegressor(
        KERNEL, max_basis=10, optimizer=None, selection=selector, random_state=0
    ).fit(X, y)
    assert len(model.basis_indices_) == 10
    assert model.selection is selector and model._selector is not selector  # cloned
    plain = SparseGPRegressor(KERNEL, max_basis=10, optimizer=None, selection="random").fit(X, y)
    assert model.cost_curve_[-1] < plain.cost_curve_[-1]


def test_exchange_with_exact_criterion_does_not_increase_cost():
    X, y = _data(n=300, seed=3)
    kw = {
        "kernel": KERNEL,
        "max_basis": 15,
        "optimizer": None,
        "random_state": 0,
        "selection": GreedySelector("exact", None),
    }
    plain = SparseGPRegressor(n_exchange=0, **kw).fit(X, y)
    exchanged = SparseGPRegressor(n_exchange=10, **kw).fit(X, y)
    assert exchanged.cost_curve_.shape == (15 + 2 * 10,)
    np.testing.assert_allclose(exchanged.cost_curve_[:15], plain.cost_curve_)
    assert exchanged.cost_curve_[-1] <= plain.cost_curve_[-1] + 1e-12
    # Deletion half-steps raise the cost, replacements lower it.
    half = exchanged.cost_curve_[14:]
    assert np.all(half[1::2] > half[0:-1:2]) and np.all(half[2::2] < half[1::2])


def test_optimizer_none_keeps_hyperparameters():
    X, y = _data()
    model = SparseGPRegressor(KERNEL, noise_variance=0.3, max_basis=10, optimizer=None).fit(X, y)
    assert model.kernel_.get_params() == KERNEL.get_params()
    assert model.noise_variance_ == 0.3
    assert model.n_iter_ == 1


def test_callable_optimizer_is_called_and_used():
    X, y = _data(n=80)
    calls = []

    def optimizer(obj_func, initial_theta, bounds):
        _, grad = obj_func(initial_theta, eval_gradient=True)
        calls.append((initial_theta.copy(), bounds.copy()))
        assert grad.shape == initial_theta.shape
        theta = np.clip(initial_theta + 0.1, bounds[:, 0], bounds[:, 1])
        return theta, obj_func(theta, eval_gradient=False)

    # noise_calibration=None: the noise variance is the optimizer's, unmoved afterwards
    model = SparseGPRegressor(
        KERNEL, max_basis=10, optimizer=optimizer, max_iter=1, random_state=0,
        noise_calibration=None,
    ).fit(X, y)
    # Three calls initialise on a random subset (full GP; from noise_variance, a tenth of the
    # targets' variance and the variance), one learns on the selected basis, warm-started
    # where the best start ended (the noise no lower than the mean squared residual).
    assert len(calls) == 4
    theta0, bounds = calls[0]
    np.testing.assert_allclose(theta0, np.append(KERNEL.theta, np.log(1e-2)))
    np.testing.assert_allclose(calls[1][0], np.append(KERNEL.theta, np.log(0.1 * np.var(y))))
    np.testing.assert_allclose(calls[2][0], np.append(KERNEL.theta, np.log(np.var(y))))
    np.testing.assert_allclose(calls[3][0][:2], theta0[:2] + 0.1)
    assert calls[3][0][2] >= theta0[2] + 0.1 - 1e-12
    assert bounds.shape == (3, 2)
    np.testing.assert_allclose(model.kernel_.theta, KERNEL.theta + 0.2)
    assert model.noise_variance_ == pytest.approx(np.exp(calls[3][0][2] + 0.1))


def test_learning_improves_likelihood_and_fixed_noise():
    X, y = _data(n=150)
    fixed = SparseGPRegressor(KERNEL, max_basis=15, optimizer=None, random_state=0).fit(X, y)
    learned = SparseGPRegressor(KERNEL, max_basis=15, random_state=0).fit(X, y)
    assert learned.log_marginal_likelihood_value_ > fixed.log_marginal_likelihood_value_
    assert learned.n_iter_ >= 1
    assert learned.noise_variance_ != 1e-2
    lml = learned.log_marginal_likelihood(
        np.append(learned.kernel_.theta, np.log(learned.noise_variance_))
    )
    assert lml == pytest.approx(learned.log_marginal_likelihood_value_, rel=1e-8)
    noise_fixed = SparseGPRegressor(
        KERNEL, max_basis=15, noise_variance_bounds="fixed", max_iter=2, random_state=0
    ).fit(X, y)
    assert noise_fixed.noise_variance_ == 1e-2


def test_lml_gradient_matches_finite_differences():
    X, y = _data(n=60)
    model = SparseGPRegressor(
        C(1.0) * Matern(length_scale=[1.0, 2.0], nu=2.5),
        max_basis=10,
        optimizer=None,
        random_state=0,
    ).fit(X, y)
    theta = np.array([0.3, -0.2, 0.5, np.log(0.05)])
    _, grad = model.log_marginal_likelihood(theta, eval_gradient=True)
    eps = 1e-6
    fd = [
        (
            model.log_marginal_likelihood(theta + eps * e)
            - model.log_marginal_likelihood(theta - eps * e)
        )
        / (2 * eps)
        for e in np.eye(4)
    ]
    np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="theta"):
        model.log_marginal_likelihood(theta[:2])


def test_max_basis_larger_than_n_warns_and_clips():
    X, y = _data(n=12)
    with pytest.warns(UserWarning, match="max_basis=50"):
        model = SparseGPRegressor(max_basis=50, optimizer=None).fit(X, y)
    assert len(model.basis_indices_) == 12


def test_duplicate_rows_give_finite_predictions():
    X, y = _data(n=20)
    X = np.vstack([X, X, X[:3]])
    y = np.concatenate([y, y + 0.01, y[:3]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = SparseGPRegressor(max_basis=43, selection="random", random_state=0).fit(X, y)
    mean, std = model.predict(X, return_std=True)
    assert np.all(np.isfinite(mean)) and np.all(np.isfinite(std))
    assert model.score(X, y) > 0.9


def test_random_state_reproducible():
    X, y = _data(n=200)
    a = SparseGPRegressor(max_basis=10, random_state=3, max_iter=2).fit(X, y)
    b = SparseGPRegressor(max_basis=10, random_state=3, max_iter=2).fit(X, y)
    np.testing.assert_array_equal(a.basis_indices_, b.basis_indices_)
    np.testing.assert_array_equal(a.predict(X), b.predict(X))


def test_hyperparameter_at_bound_warns():
    X, y = _data(n=60)
    with pytest.warns(ConvergenceWarning):
        SparseGPRegressor(
            KERNEL, max_basis=10, noise_variance_bounds=(0.5, 1.0), max_iter=1, random_state=0
        ).fit(X, y)


def test_invalid_noise_bounds():
    X, y = _data()
    with pytest.raises(ValueError, match="noise_variance_bounds"):
        SparseGPRegressor(noise_variance_bounds=(1.0, 0.1)).fit(X, y)


def test_pickle_drops_training_data_and_lml_theta_asks_for_refit():
    import pickle

    X, y = _data(n=2000)
    model = SparseGPRegressor(KERNEL, max_basis=8, optimizer=None, random_state=0).fit(X, y)
    theta = np.append(model.kernel_.theta, np.log(model.noise_variance_))
    expected = model.log_marginal_likelihood(theta)
    blob = pickle.dumps(model)
    # The pickle holds the p basis rows, not the n training rows.
    assert len(blob) < X.nbytes / 4
    restored = pickle.loads(blob)
    assert getattr(restored, "_X_train", None) is None
    np.testing.assert_array_equal(restored.predict(X), model.predict(X))
    assert restored.log_marginal_likelihood() == model.log_marginal_likelihood_value_
    with pytest.raises(ValueError, match="Refit"):
        restored.log_marginal_likelihood(theta)
    # Pickling leaves the live model whole: it still evaluates theta on its data.
    assert model.log_marginal_likelihood(theta) == expected
    # The unpickled model can be refitted and then evaluates theta again.
    assert restored.fit(X, y).log_marginal_likelihood(theta) == pytest.approx(expected)


def test_kernel_column_cache_scores_equal_fresh_scores():
    # The cache reuses columns of the previous working set; the scores must equal those of a
    # state without history for every criterion, whatever the overlap of the working sets.
    X, y = _data(n=120)
    rng = np.random.RandomState(0)
    state = RegressionState(KERNEL, X, y, S2, max_basis=10)
    for j in (3, 50, 90):
        state.append(j)
    J = rng.choice(state.candidates(), 15, replace=False)
    for criterion in ("matching_pursuit", "exact"):
        first = state.score(criterion, J)
        J2 = np.concatenate([J[5:][::-1], rng.choice(np.setdiff1d(state.candidates(), J), 7)])
        second = state.score(criterion, J2)
        fresh = RegressionState(KERNEL, X, y, S2, max_basis=10)
        for j in state.basis:
            fresh.append(j)
        K = KERNEL(X, X[J2])
        mu = y - KERNEL(X, X[state.basis]) @ state.alpha
        g = K.T @ mu - S2 * (K[state.basis].T @ state.alpha)
        if criterion == "matching_pursuit":
            d = (K * K).sum(0) + S2 * (KERNEL.diag(X[J2]) + state.jitter)
            np.testing.assert_allclose(second, -0.5 * g**2 / d, rtol=1e-9)
        np.testing.assert_allclose(second, fresh.score(criterion, J2), rtol=1e-9)
        np.testing.assert_allclose(first, fresh.score(criterion, J), rtol=1e-9)


def test_kept_working_set_replaces_only_what_left():
    X, y = _data(n=200)
    state = RegressionState(KERNEL, X, y, S2, max_basis=6)
    selector = GreedySelector("matching_pursuit", 20, keep_working_set=True)
    rng = np.random.RandomState(0)
    previous = None
    for _ in range(5):
        J = selector.working_set(state, rng)
        assert len(J) == 20 and len(np.unique(J)) == 20
        assert not np.any(state.in_basis[J])
        if previous is not None:
            # All previous candidates but the chosen one are kept.
            assert len(np.intersect1d(J, previous)) == 19
        chosen = int(J[np.argmin(state.score("matching_pursuit", J))])
        state.append(chosen)
        previous = J


def test_cost_from_factors_equals_cost_from_residual():
    X, y = _data(n=100)
    state = RegressionState(KERNEL, X, y, S2, max_basis=10)
    for j in range(0, 100, 12):
        state.append(j)
        fast = state.cost  # residual not computed yet: from |y|^2 - |beta|^2
        mu = state.residual
        exact = 0.5 * mu @ mu + 0.5 * S2 * state.w @ state.w
        assert fast == pytest.approx(exact, rel=1e-10)


@pytest.mark.parametrize("selection", ["random", "matching_pursuit", "info_gain"])
def test_exchange_steps_never_raise_the_cost(selection):
    # A replacement drawn from a working set (or by a criterion that ignores the cost) can be
    # worse than the vector that left; such an exchange is undone.
    X, y = _data(n=200, seed=5)
    p, steps = 8, 25
    model = SparseGPRegressor(
        KERNEL,
        max_basis=p,
        n_exchange=steps,
        optimizer=None,
        selection=selection,
        random_state=0,
        hyperparameter_objective="dtc",
    ).fit(X, y)
    ends = model.cost_curve_[p - 1 :: 2]  # forward end, then the end of each exchange step
    assert ends.shape == (steps + 1,)
    assert np.all(np.diff(ends) <= 1e-9 * np.abs(ends[:-1]))


# ---------------------------------------------------------------- K_p storage, streaming scores
@pytest.mark.parametrize(
    "kernel",
    [RBF(0.7), C(2.0) * RBF([0.5, 2.0]), RBF(1.3) * C(0.3), Matern(1.0, nu=1.5)],
)
def test_kernel_columns_equal_sklearn_kernel(kernel):
    from skgpsparse.kernels._columns import KernelColumns

    X, _ = _data(n=60)
    X = X + 100.0  # far from the origin: the inputs are centred before the inner products
    cols = KernelColumns(kernel, X)
    assert cols.fast == (not isinstance(kernel, Matern))
    J = np.array([4, 0, 33, 59])
    np.testing.assert_allclose(cols(slice(None), J), kernel(X, X[J]), rtol=1e-12, atol=1e-14)
    out = np.empty((10, 4))
    assert cols(slice(5, 15), J, out=out) is out
    np.testing.assert_allclose(out, kernel(X[5:15], X[J]), rtol=1e-12, atol=1e-14)


def test_kernel_columns_fall_back_when_inner_products_would_lose_digits():
    from skgpsparse.kernels._columns import KernelColumns

    X, _ = _data(n=20)
    X[0] = 1e3  # |s|^2 / 2 ~ 1e6 length scales squared: exact differences needed
    assert not KernelColumns(RBF(1.0), X).fast
    state = RegressionState(RBF(1.0), X, np.ones(20), S2, 5)
    state.append(1)
    np.testing.assert_allclose(state.V[0] * state.L[0, 0], RBF(1.0)(X, X[[1]])[:, 0])


def _dense_decrease(X, y, basis, J, jitter, kernel=KERNEL, s2=S2):
    """Exact decrease of the minimum of cost (2) when each j of J joins ``basis``."""
    base = _dense(X, y, basis, jitter, kernel, s2)["cost"] if len(basis) else 0.5 * y @ y
    return np.array([base - _dense(X, y, [*basis, j], jitter, kernel, s2)["cost"] for j in J])


@pytest.mark.parametrize("basis", [[], [3], [3, 50, 90, 17, 61]])
def test_streaming_scores_equal_dense_formulas(basis):
    X, y = _data(n=150)
    state = RegressionState(KERNEL, X, y, S2, max_basis=10)
    for j in basis:
        state.append(j)
    J = np.random.RandomState(1).choice(state.candidates(), 12, replace=False)
    exact = state.decrease("exact", J)  # a fresh working set: the streaming pass
    np.testing.assert_allclose(exact, _dense_decrease(X, y, basis, J, state.jitter), rtol=1e-7)
    # Keerthi & Chu's DMAX: only the new weight is optimised.
    K = KERNEL(X, X[J])
    ref = _dense(X, y, basis, state.jitter) if basis else {"mu": y, "alpha": np.zeros(0)}
    g = K.T @ ref["mu"] - S2 * (K[basis].T @ ref["alpha"])
    d = (K * K).sum(0) + S2 * (KERNEL.diag(X[J]) + state.jitter)
    J2 = np.random.RandomState(2).choice(np.setdiff1d(state.candidates(), J), 9, replace=False)
    K2 = KERNEL(X, X[J2])
    g2 = K2.T @ ref["mu"] - S2 * (K2[basis].T @ ref["alpha"])
    d2 = (K2 * K2).sum(0) + S2 * (KERNEL.diag(X[J2]) + state.jitter)
    np.testing.assert_allclose(state.decrease("matching_pursuit", J2), 0.5 * g2**2 / d2, rtol=1e-9)
    # The pass leaves the residual it formed; it is the dense one.
    np.testing.assert_allclose(state.residual, ref["mu"], atol=1e-10)
    assert np.all(0.5 * g**2 / d <= exact * (1 + 1e-9))  # DMAX never exceeds the exact decrease


def test_large_working_sets_scored_by_column_blocks(monkeypatch):
    X, y = _data(n=120)
    state = RegressionState(KERNEL, X, y, S2, max_basis=10)
    for j in (3, 50, 90):
        state.append(j)
    J = state.candidates()[:40]
    streamed = {c: state.decrease(c, J) for c in ("exact", "matching_pursuit")}
    monkeypatch.setattr(scoring, "_STREAM_MAX", 10)
    monkeypatch.setattr(scoring, "_CACHE_ENTRIES", 0)
    for criterion, ref in streamed.items():
        np.testing.assert_allclose(state.decrease(criterion, J), ref, rtol=1e-10)
    np.testing.assert_allclose(
        streamed["exact"], _dense_decrease(X, y, [3, 50, 90], J, state.jitter), rtol=1e-7
    )


def test_append_pass_in_many_chunks_matches_dense(monkeypatch):
    monkeypatch.setattr(rs, "_APPEND_CHUNK_ENTRIES", 1)  # chunks of 256 rows
    monkeypatch.setattr(scoring, "_SCORE_CHUNK_ENTRIES", 1)
    X, y = _data(n=700, d=3)
    model = SparseGPRegressor(KERNEL, max_basis=12, optimizer=None, random_state=0).fit(X, y)
    state = RegressionState(KERNEL, X, y, S2, max_basis=12)
    for j in model.basis_indices_:
        state.append(j)
    state.delete(4)
    _assert_matches_dense(state, X, y)


def test_passes_on_two_threads_give_the_same_numbers(monkeypatch):
    monkeypatch.setattr(rs, "_APPEND_CHUNK_ENTRIES", 1)  # chunks of 256 rows
    monkeypatch.setattr(scoring, "_SCORE_CHUNK_ENTRIES", 1)
    X, y = _data(n=3000, d=3)
    states = [RegressionState(KERNEL, X, y, S2, 8, n_threads=t) for t in (1, 2)]
    J = np.arange(100, 130)
    for j in (5, 900, 2100, 17):
        for state in states:
            state.append(j)
    for criterion in ("exact", "matching_pursuit"):
        one, two = (state.score(criterion, J) for state in states)
        np.testing.assert_array_equal(one, two)
    np.testing.assert_array_equal(states[0].residual, states[1].residual)
    np.testing.assert_array_equal(states[0].q, states[1].q)
    np.testing.assert_array_equal(states[0].R, states[1].R)
    _assert_matches_dense(states[1], X, y)


def test_length_scale_of_the_wrong_size_is_left_to_the_kernel():
    X, y = _data(n=30, d=3)
    state = RegressionState(RBF([1.0, 2.0]), X, y, S2, 5)
    assert not state._columns.fast
    with pytest.raises(ValueError, match="[Aa]nisotropic"):
        state.append(0)


def test_scoring_partial_sums_stay_bounded(monkeypatch):
    # Many chunks and a large working set: the exact criterion's partial sums of K_p^T K_J
    # are grouped (at most _PARTIAL_ENTRIES), with the same scores.
    X, y = _data(n=2000, d=3)
    state = RegressionState(KERNEL, X, y, S2, max_basis=8, n_threads=2)
    for j in (5, 900, 1500):
        state.append(j)
    J = np.arange(100, 160)
    ref = state.decrease("exact", J)
    monkeypatch.setattr(scoring, "_SCORE_CHUNK_ENTRIES", 1)  # 8 chunks of 256 rows
    monkeypatch.setattr(scoring, "_PARTIAL_ENTRIES", 3 * len(J) * 2)  # 2 groups
    seen = []
    run = scoring.run_chunks
    monkeypatch.setattr(
        scoring, "run_chunks", lambda n, work, t: (seen.append(n), run(n, work, t))
    )
    state._last_J = np.zeros(0, dtype=np.intp)
    np.testing.assert_allclose(state.decrease("exact", J), ref, rtol=1e-10)
    assert seen == [2]


@pytest.mark.parametrize("selection", ["matching_pursuit", "exact"])
def test_n_jobs_runs_the_row_passes_on_threads_with_the_same_model(monkeypatch, selection):
    # n_jobs reaches the state (two threads over several chunks) and the fitted model, with
    # exchange steps (deletions) included, is bit for bit the one-thread model.
    monkeypatch.setattr(rs, "_APPEND_CHUNK_ENTRIES", 1)  # chunks of 256 rows
    monkeypatch.setattr(scoring, "_SCORE_CHUNK_ENTRIES", 1)
    threads = []
    init = rs.RegressionState.__init__

    def spy(self, *args, **kwargs):
        init(self, *args, **kwargs)
        threads.append(self.n_threads)

    monkeypatch.setattr(rs.RegressionState, "__init__", spy)
    X, y = _data(n=1500, d=3)
    params = {"max_basis": 12, "n_exchange": 4, "selection": selection, "random_state": 0}
    one = SparseGPRegressor(KERNEL, noise_variance=S2, optimizer=None, **params).fit(X, y)
    assert set(threads) == {1}
    threads.clear()
    two = SparseGPRegressor(KERNEL, noise_variance=S2, optimizer=None, n_jobs=2, **params)
    two.fit(X, y)
    assert set(threads) == {2}
    np.testing.assert_array_equal(one.basis_indices_, two.basis_indices_)
    np.testing.assert_array_equal(one.alpha_, two.alpha_)
    np.testing.assert_array_equal(one.cost_curve_, two.cost_curve_)
    mean1, std1 = one.predict(X[:50], return_std=True)
    mean2, std2 = two.predict(X[:50], return_std=True)
    np.testing.assert_array_equal(mean1, mean2)
    np.testing.assert_array_equal(std1, std2)


def test_n_jobs_zero_is_rejected():
    X, y = _data(n=30, d=2)
    with pytest.raises(ValueError, match="n_jobs"):
        SparseGPRegressor(n_jobs=0).fit(X, y)


def test_fit_runs_blas_on_one_thread_and_restores_it(monkeypatch):
    # Hyperparameter learning included: two BLAS threads made the fit slower in wall time on
    # a two-core machine (small products); the fit limits BLAS to one thread and gives it back.
    import skgpsparse.regression._dtc as dtc

    # every evaluation of the objective factors K_uu and s2 I + V V^T in sparse_factors
    seen = record_blas_threads(monkeypatch, dtc, "sparse_factors")
    X, y = _data(n=60, d=2)
    with threadpool_limits(limits=2, user_api="blas"):
        before = blas_thread_counts()
        SparseGPRegressor(
            max_basis=8, max_iter=2, random_state=0, hyperparameter_objective="dtc",
        ).fit(X, y)
        assert blas_thread_counts() == before
    assert seen and all(t == [1] * len(t) for t in seen)
