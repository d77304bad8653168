"""EP over every row with the rows in partitions (skgpsparse.inference._ep_partitioned).

Against the in-memory all-rows EP on the same rows (skgpsparse.inference._ep),
itself tested against dense EP: the same ADF start (blocks cut by partition boundaries
included), the same sweeps, sites, posterior and evidence up to the order of the additions.
"""

import numpy as np
import pytest
from sklearn.datasets import make_moons
from sklearn.gaussian_process.kernels import RBF
from sklearn.gaussian_process.kernels import ConstantKernel as C

from skgpsparse.inference._ep import all_rows_ep, negative_log_evidence_all_rows
from skgpsparse.inference._ep_partitioned import PartitionedEP, Targets, partitioned_ep
from skgpsparse.inference._ep_passes import adf_sites
from skgpsparse.inference._sparse_prior import SparsePrior
from skgpsparse.likelihoods import StudentT
from skgpsparse.rows._store import LocalRows


def _problem(n=250, p=12):
    X, labels = make_moons(n, noise=0.3, random_state=3)
    labels = np.array(["a", "b"])[labels]  # labels of the partitions, "b" positive
    y = np.where(labels == "b", 1.0, -1.0)
    X_u = X[np.random.RandomState(0).choice(n, p, replace=False)]
    return X, labels, y, X_u, C(2.0) * RBF(0.8)


def test_adf_start_over_partitions_is_the_sequential_adf():
    # blocks of 32 rows against partitions of 70: blocks cut by the partition boundaries
    X, labels, y, X_u, kernel = _problem()
    prior = SparsePrior(kernel, X, X_u)
    tau, nu, post = adf_sites(prior, y, 0.2, rows=32)
    ep = PartitionedEP(LocalRows(X, labels, 70), "b", kernel, X_u)
    ep.run(0.2, "adf", max_sweeps=0, adf_rows=32)  # no sweep: the ADF sites
    got_tau, got_nu = ep.sites()
    np.testing.assert_allclose(got_tau, tau, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(got_nu, nu, rtol=1e-12, atol=1e-14)
    assert np.all(tau > 0)


@pytest.mark.parametrize("start", ["adf", "zero"])
def test_partitioned_ep_is_the_in_memory_ep(start):
    X, labels, y, X_u, kernel = _problem()
    prior = SparsePrior(kernel, X, X_u)
    zeros = (None, None) if start == "adf" else (np.zeros(y.size), np.zeros(y.size))
    value, (tau, nu) = negative_log_evidence_all_rows(prior, y, -0.1, *zeros)
    got, post, L, (got_tau, got_nu) = partitioned_ep(
        LocalRows(X, labels, 70), "b", kernel, X_u, -0.1, start
    )
    assert got == pytest.approx(value, rel=1e-11)
    np.testing.assert_allclose(got_tau, tau, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(got_nu, nu, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(L, prior.L, rtol=1e-13)
    # the posterior of w: B = I + V G V^T, mean B^-1 V a, formed densely here
    h = 1.0 + prior.lam * tau
    B = np.eye(len(X_u)) + (prior.V * (tau / h)) @ prior.V.T
    np.testing.assert_allclose(post.L_B @ post.L_B.T, B, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(post.mean_w, np.linalg.solve(B, prior.V @ (nu / h)),
                               rtol=1e-8, atol=1e-10)
    # the partitions' state is released
    rows = LocalRows(X, labels, 70)
    partitioned_ep(rows, "b", kernel, X_u, -0.1, start)
    assert all(not part.state for part in rows.partitions)


def test_partitioned_signed_ep_is_the_in_memory_ep():
    # a Student-t at a scale far below the prior's: site precisions ~1e5 and negative ones at
    # the gross errors; the partitions follow the in-memory EP's damping growth and its stop
    # on the sites' change relative to their size (without them neither converges here)
    rng = np.random.RandomState(0)
    X = np.sort(rng.uniform(-3.0, 3.0, (150, 1)), axis=0)
    y = np.sin(X[:, 0]) + 0.002 * rng.randn(150)
    y[[4, 15, 23, 90]] += [6.0, -5.0, 8.0, -4.0]
    kernel = C(1.0) * RBF(1.0)
    X_u = np.linspace(-3.0, 3.0, 15)[:, None]
    likelihood = StudentT(dof=4.0, scale=0.003)
    prior = SparsePrior(kernel, X, X_u)
    tau, nu, _, converged = all_rows_ep(prior, y, 0.0, likelihood=likelihood)
    assert converged and np.max(tau) > 1e4 and np.sum(tau < 0) >= 4
    ep = PartitionedEP(LocalRows(X, y, 40), Targets(0.0, 1.0), kernel, X_u,
                       likelihood=likelihood)
    _, _, got_converged = ep.run(0.0, "adf")
    got_tau, got_nu = ep.sites()
    assert got_converged
    np.testing.assert_allclose(got_tau, tau, rtol=1e-9)
    np.testing.assert_allclose(got_nu, nu, rtol=1e-9)
