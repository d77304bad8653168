"""scikit-learn's own ``test_gpr.py`` run against a full-basis SparseGPRegressor.

The module shipped with the installed scikit-learn is imported, its
``GaussianProcessRegressor`` replaced by :class:`FullBasisGPR` (scikit-learn's constructor:
``alpha`` is ``noise_variance``, fixed; ``max_basis`` is the number of training rows, so the
model is the exact GP), and its test functions are collected here with their
parametrizations. Those where the models genuinely differ are listed in :data:`DIFFERENCES`
with the reason (and on the comparison page, docs/compared.rst); each is replaced by a test
that the difference is the one described. No test of this ``test_gpr.py`` fits with an array
``alpha`` (per-row noise); ``test_gpr_fit_error``'s array of the wrong length is refused by the
shim's check of ``alpha``, scikit-learn's.
"""

import numpy as np
import pytest
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import DotProduct, WhiteKernel
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

    _parameter_constraints: dict = {**GaussianProcessRegressor._parameter_constraints}

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
    likelihood = "gaussian"
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
        # scikit-learn's check of alpha's length (the shim's own parameter); an array of the
        # right length is per-row noise, SparseGPRegressor's noise_variance as an array
        alpha = self.alpha
        if np.iterable(alpha) and np.shape(alpha)[0] not in (1, _num_samples(y)):
            raise ValueError(
                "alpha must be a scalar or an array with same number of entries as y. "
                f"({np.shape(alpha)[0]} != {_num_samples(y)})"
            )
        self.max_basis = max(1, _num_samples(X))  # every row in the basis
        return super().fit(X, y)


# Where the models genuinely differ: test (or parametrization) -> reason. Each is replaced
# below by a test of the difference; docs/compared.rst lists them too.
DIFFERENCES = {
    "test_gpr_correct_error_message": (
        "alpha=0 with a kernel without a WhiteKernel term: scikit-learn tries the Cholesky "
        "factor of K (singular for DotProduct on these rows) and raises LinAlgError with "
        "advice; SparseGPRegressor refuses noise_variance=0 up front with a ValueError "
        "naming noise_variance (its basis needs a noise, or a WhiteKernel as the noise)"
    ),
    "test_gpr_fit_error[params1]": (
        "a WhiteKernel alone with n_restarts_optimizer: scikit-learn fits the pure-noise GP "
        "and refuses infinite bounds for its random restarts; SparseGPRegressor refuses a "
        "kernel with no function part (ValueError naming kernel) and has no random restarts "
        "of the regressor's hyperparameters (n_restarts_optimizer is ignored by the shim)"
    ),
}


@pytest.fixture(autouse=True)
def _shim(monkeypatch):
    monkeypatch.setattr(_sklearn_tests, "GaussianProcessRegressor", FullBasisGPR)


for _name in dir(_sklearn_tests):
    if _name.startswith("test_") and _name not in ("test_gpr_correct_error_message",
                                                   "test_gpr_fit_error"):
        globals()[_name] = getattr(_sklearn_tests, _name)


def test_gpr_fit_error_alpha_length():
    # scikit-learn's test_gpr_fit_error[params0]: an alpha array of another length than y
    _sklearn_tests.test_gpr_fit_error(
        {"alpha": np.zeros(100)}, ValueError,
        "alpha must be a scalar or an array with same number of entries as y",
    )


def test_difference_alpha_zero_needs_a_white_kernel():
    # DIFFERENCES["test_gpr_correct_error_message"]
    X, y = np.arange(12.0).reshape(6, -1), np.ones(6)
    with pytest.raises(ValueError, match=r"noise_variance=0 needs a WhiteKernel term.*"
                                         r"got kernel=DotProduct"):
        FullBasisGPR(kernel=DotProduct(), alpha=0.0).fit(X, y)
    # with a WhiteKernel term as the noise, the same rows fit as scikit-learn's with alpha
    ours = FullBasisGPR(kernel=DotProduct() + WhiteKernel(1e-2, "fixed"), alpha=0.0,
                        optimizer=None).fit(X, y)
    theirs = GaussianProcessRegressor(kernel=DotProduct(), alpha=1e-2, optimizer=None).fit(X, y)
    np.testing.assert_allclose(ours.predict(X + 0.5), theirs.predict(X + 0.5), rtol=1e-6)


def test_difference_white_kernel_alone_is_refused():
    # DIFFERENCES["test_gpr_fit_error[params1]"]
    kernel = WhiteKernel(noise_level_bounds=(-np.inf, np.inf))
    with pytest.raises(ValueError, match=r"kernel=WhiteKernel.* has no function part"):
        FullBasisGPR(kernel=kernel, n_restarts_optimizer=2).fit(_sklearn_tests.X,
                                                                _sklearn_tests.y)
