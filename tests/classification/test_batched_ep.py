"""The batched EP of K label vectors under one prior against the one-class engine, class by
class (the shared multi-class learning's objective relies on their being the same runs)."""

import numpy as np
import pytest
from sklearn.gaussian_process.kernels import RBF
from sklearn.gaussian_process.kernels import ConstantKernel as C

from skgpsparse.inference._ep import (
    all_rows_ep,
    contract_theta_gradient,
    negative_log_evidence_all_rows,
    theta_gradient_weights,
)
from skgpsparse.inference._ep_batched import (
    batched_ep,
    negative_log_evidences,
    summed_theta_gradient_weights,
)
from skgpsparse.inference._sparse_prior import SparsePrior
from skgpsparse.likelihoods import Probit, StudentT

N_CLASSES = 4


def _problem(n=150, seed=0, weights=False, prior="fitc"):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, 3)
    labels = np.argmax(X[:, :2] @ rng.randn(2, N_CLASSES) + 0.7 * rng.randn(n, N_CLASSES),
                       axis=1)
    Y = np.where(labels[None, :] == np.arange(N_CLASSES)[:, None], 1.0, -1.0)
    w = rng.uniform(0.5, 3.0, n) if weights else None
    sparse = SparsePrior(C(1.3) * RBF(1.2), X, X[::10], prior, weights=w)
    return sparse, Y, np.array([-0.5, -0.8, -0.6, -0.3])


def _loop(sparse, Y, biases, sites, tol, **kwargs):
    return [all_rows_ep(sparse, Y[k], biases[k], *sites[k], tol=tol, accelerate=True, **kwargs)
            for k in range(Y.shape[0])]


def _assert_same_runs(batched, loop):
    for one, other in zip(batched, loop):
        assert one[3] == other[3]  # converged alike
        for x, y in zip(one[:2] + one[2][:2], other[:2] + other[2][:2]):  # tau, nu, mu, s2
            np.testing.assert_allclose(x, y, rtol=1e-10, atol=1e-12)
        for x, y in zip(one[2][2], other[2][2]):  # h, g, a, L_B, uu, Ua, mean_w
            np.testing.assert_allclose(x, y, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("prior", ["fitc", "dtc"])
@pytest.mark.parametrize("weights", [False, True])
@pytest.mark.parametrize("tol", [1e-3, 1e-9])
def test_batched_runs_are_the_one_class_runs(prior, weights, tol):
    sparse, Y, biases = _problem(weights=weights, prior=prior)
    zeros = (np.zeros(Y.shape[1]), np.zeros(Y.shape[1]))
    loop = _loop(sparse, Y, biases, [zeros] * N_CLASSES, tol)
    batched = batched_ep(sparse, Y, biases, [zeros] * N_CLASSES, tol=tol)
    _assert_same_runs(batched, loop)
    # warm-started from other sites (as the learning's next evaluation): the same again
    warm = [(run[0] * 0.7, run[1] * 0.9) for run in loop]
    _assert_same_runs(batched_ep(sparse, Y, biases - 0.1, warm, tol=tol),
                      _loop(sparse, Y, biases - 0.1, warm, tol))


def test_classes_stop_at_their_own_sweeps_and_max_sweeps_is_kept():
    sparse, Y, biases = _problem()
    zeros = (np.zeros(Y.shape[1]), np.zeros(Y.shape[1]))
    # a warm start at class 0's fixed point: it stops after one sweep, the others run on
    start = _loop(sparse, Y, biases, [zeros] * N_CLASSES, 1e-10)[0][:2]
    sites = [start] + [zeros] * (N_CLASSES - 1)
    _assert_same_runs(batched_ep(sparse, Y, biases, sites, tol=1e-9),
                      _loop(sparse, Y, biases, sites, 1e-9))
    few = batched_ep(sparse, Y, biases, sites, tol=1e-12, max_sweeps=2)
    _assert_same_runs(few, _loop(sparse, Y, biases, sites, 1e-12, max_sweeps=2))
    assert [run[3] for run in few][1:] == [False] * (N_CLASSES - 1)


def test_the_prior_keeps_the_last_converged_run_as_the_loop_leaves_it():
    sparse, Y, biases = _problem()
    zeros = (np.zeros(Y.shape[1]), np.zeros(Y.shape[1]))
    runs = batched_ep(sparse, Y, biases, [zeros] * N_CLASSES, tol=1e-8)
    y, bias, tol, _, run = sparse._converged
    np.testing.assert_array_equal(y, Y[-1])
    assert (bias, tol) == (biases[-1], 1e-8)
    assert run is runs[-1]
    # a class started at its converged sites is that run again (EP's memo), not a new one
    again = batched_ep(sparse, Y, biases, [r[:2] for r in runs], tol=1e-8)
    assert again[-1] is runs[-1]


def test_signed_sites_take_the_one_class_engine():
    rng = np.random.RandomState(3)
    X = rng.randn(80, 2)
    Y = np.vstack([np.sin(X[:, 0]), np.cos(X[:, 1])]) + 0.1 * rng.standard_t(2, (2, 80))
    sparse = SparsePrior(RBF(1.0), X, X[::8], "dtc")
    zeros = (np.zeros(80), np.zeros(80))
    likelihood = StudentT(scale=0.2, dof=4.0)
    batched = batched_ep(sparse, Y, [0.0, 0.1], [zeros] * 2, tol=1e-8, likelihood=likelihood)
    loop = [all_rows_ep(sparse, Y[k], b, *zeros, tol=1e-8, accelerate=True,
                        likelihood=likelihood) for k, b in enumerate([0.0, 0.1])]
    for one, other in zip(batched, loop):
        np.testing.assert_array_equal(one[0], other[0])


@pytest.mark.parametrize("prior", ["fitc", "dtc"])
@pytest.mark.parametrize("weights", [False, True])
def test_evidences_and_summed_gradient_weights_are_the_classes_sums(prior, weights):
    sparse, Y, biases = _problem(weights=weights, prior=prior)
    zeros = (np.zeros(Y.shape[1]), np.zeros(Y.shape[1]))
    values, grad_b, summed, sites = negative_log_evidences(
        sparse, Y, biases, [zeros] * N_CLASSES, eval_gradient=True, tol=1e-10,
        likelihood=Probit(),
    )
    full = [negative_log_evidence_all_rows(sparse, Y[k], biases[k], *zeros, eval_gradient=True,
                                           tol=1e-10, accelerate=True) for k in range(N_CLASSES)]
    np.testing.assert_allclose(values, [out[0] for out in full], rtol=1e-10)
    np.testing.assert_allclose(grad_b, [out[1][-1] for out in full], rtol=1e-10)
    for (tau, nu), out in zip(sites, full):
        np.testing.assert_allclose(tau, out[2][0], rtol=1e-10, atol=1e-12)
    # the summed weights against the per-class weights, summed (an independent formation)
    runs = _loop(sparse, Y, biases, [zeros] * N_CLASSES, 1e-10)
    per_class = [theta_gradient_weights(sparse, *(run[2][2][i] for i in (1, 2, 3, 4, 6)))
                 for run in runs]
    for i in range(3):
        np.testing.assert_allclose(summed[i], sum(w[i] for w in per_class), rtol=1e-10,
                                   atol=1e-10 * np.max(np.abs(summed[i])))
    np.testing.assert_allclose(summed_theta_gradient_weights(sparse, runs)[1], summed[1],
                               rtol=1e-10, atol=1e-12)
    # and their contraction is the sum of the classes' theta gradients
    np.testing.assert_allclose(-contract_theta_gradient(sparse, *summed),
                               sum(out[1][:-1] for out in full), rtol=1e-9)
