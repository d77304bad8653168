"""The SSEM step's choice between factor updates and a refactorisation, and planned visits."""

import numpy as np
import pytest
from sklearn.gaussian_process.kernels import RBF

from skgpsparse.rvm._basis_functions import basis_rows
from skgpsparse.rvm._factor_cost import refactor_is_cheaper, refactor_seconds, update_seconds
from skgpsparse.rvm._regression_em import _RegressionEM
from skgpsparse.rvm._subspace_em import DOWNDATE_KEEP, run_subspace_em


def _problem(n=80, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.uniform(-3, 3, size=(n, 2))
    y = np.sin(X[:, 0]) * np.cos(0.5 * X[:, 1]) + 0.1 * rng.randn(n)
    centers = np.vstack([X, np.zeros((1, 2))])
    bias_mask = np.zeros(n + 1, dtype=bool)
    bias_mask[n] = True
    return X, y, centers, bias_mask


def _fit(factor_update, learn_noise, seed=0, plan=True):
    X, y, centers, bias_mask = _problem(seed=seed)
    n = len(y)
    model = _RegressionEM(
        RBF(1.0), X, y, centers, bias_mask, 0.05, learn_noise, 1e9, 1e-10, factor_update
    )
    if not plan:
        model.plan_visits = None  # run_subspace_em then adds without announcing the order
    hist = run_subspace_em(
        model,
        np.arange(n + 1),
        method="ssem",
        alpha_init="auto",
        max_iter=30,
        tol=0,
        rng=np.random.RandomState(seed),
        first=np.array([n]),
    )
    return model, hist


@pytest.mark.parametrize("learn_noise", [False, True])
@pytest.mark.parametrize("factor_update", ["cost", "refactor"])
def test_refactorising_sweep_equals_updating_sweep(factor_update, learn_noise):
    # the same SSEM fit (Figure 1; eq. 7's factor by LAPACK or by rank-k updates, Givens
    # deletions and appends): the same likelihood at every step, active set, alphas and
    # posterior mean
    upd, hist_upd = _fit("update", learn_noise)
    ref, hist_ref = _fit(factor_update, learn_noise)
    assert upd.counts["alpha_refactor"] == 0 and upd.counts["rank_k"] > 50
    assert ref.counts["alpha_refactor"] > 50
    if factor_update == "refactor":
        assert ref.counts["rank_k"] == ref.counts["delete"] == ref.counts["move"] == 0
    # (the two factors differ by round-off, ~1e-9 after a sweep; EM moves the alphas of
    # weakly determined weights slowly, so that difference lingers for a few steps, and the
    # likelihood passes through 0 in the sweep: the tolerance is relative to its scale)
    ll = np.asarray(hist_upd["log_likelihood"])
    np.testing.assert_allclose(
        hist_ref["log_likelihood"], ll, rtol=1e-7, atol=1e-7 * np.abs(ll).max()
    )
    a, b = np.argsort(upd.design.index), np.argsort(ref.design.index)
    np.testing.assert_array_equal(upd.design.index[a], ref.design.index[b])
    np.testing.assert_allclose(ref.design.alpha[b], upd.design.alpha[a], rtol=1e-5)
    np.testing.assert_allclose(ref.posterior()[0][b], upd.posterior()[0][a], rtol=1e-5)
    assert ref.s2 == pytest.approx(upd.s2, rel=1e-8)
    assert 3 < ref.n_active < 60


def test_cost_model_prefers_updates_only_for_few_late_changes_in_a_large_factor():
    # one alpha change in the last rows of a factor of 800: a few row steps against M^3 / 3
    M = 800
    alpha = np.ones(M)
    new = alpha.copy()
    new[-2] = 2.0  # an increase
    none = np.zeros(M, dtype=bool)
    pivots = np.full(M, 10.0)
    assert not refactor_is_cheaper(alpha, new, new != alpha, none, pivots, DOWNDATE_KEEP)
    # a change from the first row on of a factor of 800, or any change of a small factor
    new[0] = 0.5
    assert refactor_is_cheaper(alpha, new, new != alpha, none, pivots, DOWNDATE_KEEP)
    small = np.ones(30)
    new_small = small.copy()
    new_small[-1] = 2.0
    change = new_small != small
    assert refactor_is_cheaper(small, new_small, change, none[:30], pivots[:30], DOWNDATE_KEEP)
    # the priced times grow with what they price
    assert refactor_seconds(400) > 4 * refactor_seconds(200)
    empty = np.empty(0, dtype=int)
    assert update_seconds(400, 0, 5, 400, 0, empty, empty) > update_seconds(
        400, 300, 5, 400, 0, empty, empty
    )
    # pruned rows and collapsing pivots cost their Givens sweeps
    assert update_seconds(400, 400, 0, 400, 0, np.array([0]), empty) > update_seconds(
        400, 400, 0, 400, 0, np.array([390]), empty
    )


def test_cost_model_counts_a_collapsing_pivot_as_a_move():
    # a decrease that keeps less than DOWNDATE_KEEP of its pivot is a deletion + append from
    # its row on: at the first row of a large factor that is dearer than refactorising
    M = 600
    alpha = np.full(M, 1e9)
    new = alpha.copy()
    new[0] = 1.0
    pivots = np.full(M, 1e9 + 1.0)
    none = np.zeros(M, dtype=bool)
    assert refactor_is_cheaper(alpha, new, new != alpha, none, pivots, DOWNDATE_KEEP)
    # the same decrease at the last row: a short move, cheaper than M^3 / 3
    new = alpha.copy()
    new[-1] = 1.0
    assert not refactor_is_cheaper(alpha, new, new != alpha, none, pivots, DOWNDATE_KEEP)


def test_planned_visits_give_the_same_rows_and_fit():
    # the design rows computed a block of planned visits at a time are k(X, x_j) as computed
    # one at a time, and the sweep is the same fit
    planned, hist_p = _fit("cost", True, seed=1)
    single, hist_s = _fit("cost", True, seed=1, plan=False)
    X, _, centers, bias_mask = _problem(seed=1)
    rows = basis_rows(RBF(1.0), X, centers[planned.design.index], bias_mask[planned.design.index])
    np.testing.assert_allclose(planned.design.rows, rows, rtol=1e-14, atol=1e-300)
    np.testing.assert_allclose(hist_p["log_likelihood"], hist_s["log_likelihood"], rtol=1e-12)
    np.testing.assert_array_equal(planned.design.index, single.design.index)


def test_planned_visits_call_the_kernel_once_per_block():
    X, y, centers, bias_mask = _problem(n=150)
    calls = []

    class CountingRBF(RBF):
        def __call__(self, X, Y=None, eval_gradient=False):
            calls.append(1 if Y is None else len(X))
            return super().__call__(X, Y, eval_gradient)

    model = _RegressionEM(
        CountingRBF(1.0), X, y, centers, bias_mask, 0.05, True, 1e9, 1e-10, "cost"
    )
    order = np.random.RandomState(0).permutation(151)
    model.plan_visits(order)
    for j in order:
        model.add(np.array([j]), None)
        model.subspace_step()
    # 151 visits, 64 to a block (the bias needs no kernel call)
    assert len(calls) == 3
    # an entry out of the planned order is computed on its own
    model.add(np.array([0]), None)
    assert len(calls) == 4


def test_sweep_adds_blocks_once_the_active_set_is_large(monkeypatch):
    # §3: the model grows by "some" alpha_j per step; with GROWTH_BLOCK = 4 the sweep adds
    # M // 4 basis functions per step from M = 8 on. Every candidate is still visited once
    # (appended at alpha = L), the likelihood never decreases in the sweep (the projection
    # onto the enlarged subspace is exact, §3), and the factor is A + Phi^T Phi / s2's.
    import skgpsparse.rvm._regression_em as regression_em

    monkeypatch.setattr(regression_em, "GROWTH_BLOCK", 4)
    X, y, centers, bias_mask = _problem(n=120, seed=3)
    y = np.sin(2 * X[:, 0]) + np.cos(X[:, 1])  # noise-free: many relevance vectors
    kernel = RBF(0.5)
    model = _RegressionEM(kernel, X, y, centers, bias_mask, 0.05, False, 1e9, 1e-10, "cost")
    sizes = []
    add = model.add
    model.add = lambda entries, alpha: (sizes.append(len(entries)), add(entries, alpha))
    hist = run_subspace_em(
        model,
        np.arange(121),
        method="ssem",
        alpha_init="auto",
        max_iter=0,
        tol=0,
        rng=np.random.RandomState(0),
        first=np.array([120]),
    )
    assert sum(sizes) == 121 and model.counts["append"] == 121
    assert max(sizes) > 2 and hist["n_sweep"] == len(sizes) < 121
    assert all(k == 1 for k, m in zip(sizes, [0, *hist["n_active"]]) if m < 8)
    assert np.all(np.diff(hist["log_likelihood"]) >= -1e-9 * np.abs(hist["log_likelihood"][1:]))
    idx = model.design.index
    Phi = np.ones((120, len(idx)))
    Phi[:, idx < 120] = kernel(X, X[idx[idx < 120]])
    S = np.diag(model.design.alpha) + Phi.T @ Phi / model.s2
    d = model.design.alpha**-0.5
    L = np.tril(model.L)
    err = np.linalg.norm(d[:, None] * (L - np.linalg.cholesky(S)))
    assert err < 1e-8 * np.linalg.norm(d[:, None] * L)
