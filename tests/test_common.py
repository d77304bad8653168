"""scikit-learn's estimator checks over every estimator skgpsparse exports, in several setups."""

from sklearn.gaussian_process.kernels import RBF, ConstantKernel
from sklearn.utils.estimator_checks import parametrize_with_checks

from skgpsparse import (
    RelevanceVectorClassifier,
    RelevanceVectorRegressor,
    SparseGPClassifier,
    SparseGPRegressor,
)


def _classifiers():
    # Small bases and short outer loops keep the ~55 checks per setup fast. The default
    # posterior is the all-rows EP with the entropy selection ("auto"), where
    # hyperparameter_objective is unused: setups with selection="entropy" or
    # hyperparameter_objective="evidence" ran the default's code again and are not repeated.
    common = dict(max_basis=15, max_iter=2, random_state=0)
    yield SparseGPClassifier(**common)  # all-rows EP, entropy selection, learned kernel
    for selection in ("random", "info_gain", "nlp"):
        yield SparseGPClassifier(selection=selection, **common)
    yield SparseGPClassifier(optimizer=None, kernel=ConstantKernel(2.0) * RBF(1.5),
                             max_basis=15, random_state=0)
    yield SparseGPClassifier(site_update="optimize", **common)
    yield SparseGPClassifier(n_exchange=3, **common)
    yield SparseGPClassifier(n_restarts=1, **common)
    # the basis posterior (the papers' design: sites on the basis rows, NLP objective; it
    # has no partial_fit)
    yield SparseGPClassifier(posterior="basis", **common)
    # (the default above two classes is the shared fit, one kernel for all classes)
    yield SparseGPClassifier(multi_class="independent", **common)  # a whole fit per class


def _regressors():
    common = dict(max_basis=15, max_iter=2, random_state=0)
    yield SparseGPRegressor(**common)  # default kernel's choice, VFE, refined basis inputs
    # The other selections and the exchange steps on a given kernel (no per-feature trial on
    # the subset; the default setup checks it) and with the selected rows kept: the
    # alternation of selection and learning (max_iter), which the refinement replaces.
    fixed_basis = dict(kernel=ConstantKernel(1.0) * RBF(1.0), refine_basis=0, **common)
    for selection in ("random", "exact", "info_gain"):
        yield SparseGPRegressor(selection=selection, **fixed_basis)
    yield SparseGPRegressor(n_exchange=5, **fixed_basis)
    yield SparseGPRegressor(hyperparameter_objective="dtc", **common)  # the non-default bound
    yield SparseGPRegressor(ConstantKernel(1.0) * RBF(3.0), max_basis=8, n_exchange=2,
                            selection="exact", optimizer=None)
    # Fixed hyperparameters must suit the checks' data (10 standardised features, 1 informative).
    yield SparseGPRegressor(optimizer=None, kernel=ConstantKernel(1.0) * RBF(5.0),
                            noise_variance=0.1, max_basis=15, random_state=0)


def _relevance_vector_machines():
    # Small libraries and few batch steps keep the checks fast; the naive mean field shares
    # the API path with TAP (its fixed point is tested in test_rvm.py).
    yield RelevanceVectorRegressor(random_state=0)
    yield RelevanceVectorRegressor(method="batch_em", bias=False, max_iter=20, random_state=0)
    yield RelevanceVectorClassifier(n_basis_functions=10, max_iter=3, random_state=0)
    yield RelevanceVectorClassifier(method="batch_em", cavity_variance="laplace",
                                    n_basis_functions=15, max_iter=5, random_state=0)


@parametrize_with_checks(
    list(_classifiers()) + list(_regressors()) + list(_relevance_vector_machines())
)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)
