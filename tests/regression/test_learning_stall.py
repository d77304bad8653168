"""Hyperparameter learning stops when L-BFGS-B's iterations stop paying (``STALL_PER_ROW``)."""

import numpy as np
import pytest
from sklearn.gaussian_process.kernels import RBF
from sklearn.gaussian_process.kernels import ConstantKernel as C

from skgpsparse.regression import _hyperparameters
from skgpsparse.regression._hyperparameters import learn_hyperparameters
from skgpsparse.regression._vfe import vfe_log_marginal_likelihood


def _counted(counter):
    def objective(*args, **kwargs):
        counter.append(1)
        return vfe_log_marginal_likelihood(*args, **kwargs)

    return objective


def _learn(objective, X, y):
    return learn_hyperparameters(
        C(1.0) * RBF(np.full(X.shape[1], 2.0)), 0.1, X, y, X[:40],
        noise_bounds=(1e-6, 10.0), optimizer="fmin_l_bfgs_b", jitter=1e-8,
        objective=objective,
    )


@pytest.mark.parametrize("seed", [0, 1])
def test_stall_keeps_the_learned_objective_within_its_charge(monkeypatch, seed):
    # two relevant inputs, four irrelevant ones whose length scales creep towards the bound
    rng = np.random.RandomState(seed)
    X = rng.uniform(-2, 2, (400, 6))
    y = np.sin(2 * X[:, 0]) + X[:, 1] ** 2 / 2 + 0.1 * rng.randn(400)
    stalled, full = [], []
    charge = _hyperparameters.STALL_PER_ROW * len(X)
    kernel, s2, value = _learn(_counted(stalled), X, y)
    monkeypatch.setattr(_hyperparameters, "STALL_PER_ROW", 0.0)
    kernel_full, s2_full, value_full = _learn(_counted(full), X, y)
    assert len(stalled) < len(full)
    # the bound at the stall is within a few windows' charge (1e-4 nats per row each) of
    # L-BFGS-B's own end, and the relevant length scales and the noise agree
    assert value_full - 3 * charge <= value <= value_full + 1e-3
    np.testing.assert_allclose(
        kernel.k2.length_scale[:2], kernel_full.k2.length_scale[:2], rtol=0.05
    )
    np.testing.assert_allclose(s2, s2_full, rtol=0.05)
