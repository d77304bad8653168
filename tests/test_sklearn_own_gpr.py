"""scikit-learn's own ``test_gpr.py`` run against a full-basis SparseGPRegressor.

The module shipped with the installed scikit-learn is imported, its
``GaussianProcessRegressor`` replaced by :class:`FullBasisGPR` (scikit-learn's constructor:
``alpha`` is ``noise_variance``, fixed; ``max_basis`` is the number of training rows, so the
model is the exact GP), and its test functions are collected here with their
parametrizations. Those where the models genuinely differ are listed in :data:`DIFFERENCES`
with the reason (and on the comparison page, docs/compared.rst); each is replaced by a test
that the difference is the one described.
"""

import sys

import numpy as np
import pytest
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.tests import test_gpr as _sklearn_tests
from sklearn.utils.validation import _num_samples

from skgpsparse import SparseGPRegressor


class FullBasisGPR(SparseGPRegressor):
    """SparseGPRegressor with scikit-learn's GaussianProcessRegressor constructor.

    ``alpha`` is the fixed noise variance, every training row is in the basis (the exact
    GP), the basis stays on the rows and the noise is not recalibrated; ``copy_X_train`` and
    ``n_restarts_optimizer`` are accepted (the fit keeps no copy it could share, and has no
    random restarts of the regressor's hyperparameters).
    """

    _parameter_constraints = dict(GaussianProcessRegressor._parameter_constraints)

    def __init__(self, kernel=None, *, alpha=1e-10, optimizer="fmin_l_bfgs_b",
                 n_restarts_optimizer=0, normalize_y=False, copy_X_train=True,
                 n_targets=None, random_state=None):
        self.kernel = kernel
        self.alpha = alpha
        self.optimizer = optimizer
        self.n_restarts_optimizer = n_restarts_optimizer
        self.normalize_y = normalize_y
        self.copy_X_train = copy_X_train
        self.n_targets = n_targets
        self.random_state = random_state

    # the SparseGPRegressor parameters the shim does not take: the full-basis exact GP
    noise_variance_bounds = "fixed"
    selection = "matching_pursuit"
    working_set_size = None
    n_exchange = 0
    hyperparameter_objective = "dtc"
    noise_calibration = None
    refine_basis = 0
    max_iter = 10
    learning_rows = None
    tol = 1e-4
    verbose = 0
    n_jobs = None
    warm_start = False
    max_basis = 1

    @property
    def noise_variance(self):
        return self.alpha

    def fit(self, X, y):
        self.max_basis = max(1, _num_samples(X))  # every row in the basis
        return super().fit(X, y)


# Where the models genuinely differ: test name -> reason (docs/compared.rst says the same).
DIFFERENCES = {}

# Tests that need noise_variance as an array (per-row noise, another branch).
NEEDS_ARRAY_ALPHA = set()


@pytest.fixture(autouse=True)
def _shim(monkeypatch):
    monkeypatch.setattr(_sklearn_tests, "GaussianProcessRegressor", FullBasisGPR)


_names = [name for name in dir(_sklearn_tests) if name.startswith("test_")]
for _name in _names:
    if _name not in DIFFERENCES:
        setattr(sys.modules[__name__], _name, getattr(_sklearn_tests, _name))
