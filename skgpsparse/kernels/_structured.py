"""Kernels on structured inputs (``requires_vector_input = False``): fitted on row indices.

scikit-learn's GPs fit a kernel over strings, sequences or graphs on a list of such inputs
(its gallery example "Gaussian processes on discrete data structures"). The sparse models
select, store and predict through rows of a float array; so the inputs are replaced by their
row numbers, a ``(n, 1)`` float column, and the kernel by :class:`IndexedKernel`, which looks
the rows up before calling the user's kernel. Every numerical path then runs unchanged, and
the fast paths of known vector kernels are never taken (the wrapper is none of them). A
prediction looks its query rows up in the training inputs followed by the queries
(:func:`indexed_predictors`), so the fitted model is never modified by a call.
"""

import copy

import numpy as np
from sklearn.gaussian_process.kernels import Exponentiation
from sklearn.utils.validation import validate_data

from ._columns import CrossKernel

__all__ = [
    "STRUCTURED_STREAM",
    "IndexedKernel",
    "fit_indexed",
    "indexed_predictors",
    "is_structured",
    "query_rows",
    "refuse_structured",
]


class _Inputs:
    """The structured inputs, shared (not copied) by the clones of an :class:`IndexedKernel`."""

    def __init__(self, items):
        self.items = items

    def __deepcopy__(self, memo):
        return self

    def __len__(self):
        return len(self.items)

    def take(self, X):
        """The inputs at the row numbers in the first column of ``X``."""
        return self.items[np.asarray(X)[:, 0].astype(np.intp)]


class IndexedKernel(Exponentiation):
    """``kernel`` on structured inputs, called with their row numbers in ``inputs``.

    ``theta``, ``bounds`` and the hyperparameters are the wrapped kernel's (with scikit-learn's
    ``kernel__`` prefix, as for an ``Exponentiation`` of exponent 1); attributes it does not
    have are the wrapped kernel's, and it prints as the wrapped kernel.

    Parameters
    ----------
    kernel : Kernel
        A kernel with ``requires_vector_input = False``.
    inputs : _Inputs
        The structured inputs that row numbers refer to.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgpsparse.kernels._structured import IndexedKernel, _Inputs
    >>> inputs = np.array([[0.0], [1.0], [3.0]])
    >>> kernel = IndexedKernel(RBF(2.0), _Inputs(inputs))
    >>> rows = np.array([[2.0], [0.0]])  # the third and the first input
    >>> bool(np.allclose(kernel(rows), RBF(2.0)(inputs[[2, 0]])))
    True
    >>> kernel, kernel.length_scale, kernel.theta.shape
    (RBF(length_scale=2), 2.0, (1,))
    """

    def __init__(self, kernel, inputs):
        self.kernel, self.inputs, self.exponent = kernel, inputs, 1.0

    def __getattr__(self, name):
        if name.startswith("__") or "kernel" not in self.__dict__:
            raise AttributeError(name)
        return getattr(self.__dict__["kernel"], name)

    def get_params(self, deep=True):
        params = {"kernel": self.kernel, "inputs": self.inputs}
        if deep:
            params.update(("kernel__" + k, v) for k, v in self.kernel.get_params().items())
        return params

    def __call__(self, X, Y=None, eval_gradient=False):
        Y = None if Y is None else self.inputs.take(Y)
        return self.kernel(self.inputs.take(X), Y, eval_gradient=eval_gradient)

    def diag(self, X):
        return np.asarray(self.kernel.diag(self.inputs.take(X)), dtype=np.float64)

    def is_stationary(self):
        return self.kernel.is_stationary()

    @property
    def requires_vector_input(self):
        return True  # row numbers

    def __repr__(self):
        return repr(self.kernel)


def is_structured(estimator):
    """Whether ``estimator.kernel`` takes structured inputs (``requires_vector_input`` False)."""
    kernel = getattr(estimator, "kernel", None)
    return kernel is not None and not getattr(kernel, "requires_vector_input", True)


def _rows(inputs):
    return np.arange(len(inputs), dtype=np.float64)[:, None]


def fit_indexed(estimator, X, y, fit, **fit_params):
    """``fit(rows, y, **fit_params)`` with ``estimator.kernel`` an :class:`IndexedKernel` over
    ``X`` (``fit_params`` of value None are not passed: an estimator's subclass may define
    ``fit(X, y)``).

    ``X`` is validated as scikit-learn's GPs validate it for such kernels
    (``ensure_2d=False, dtype=None``); the constructor's kernel is restored afterwards, and
    ``n_features_in_`` left unset, as scikit-learn's GPs leave it for structured inputs.
    """
    items = validate_data(estimator, X, ensure_2d=False, dtype=None)
    kernel = estimator.kernel
    inputs = _Inputs(items)
    estimator.kernel = IndexedKernel(kernel, inputs)
    try:
        fit(_rows(inputs), y, **{k: v for k, v in fit_params.items() if v is not None})
    finally:
        estimator.kernel = kernel
    estimator.__dict__.pop("n_features_in_", None)
    return estimator


def indexed_predictors(estimator, X, predictors):
    """Query rows for structured ``X`` and copies of ``predictors`` that look them up.

    Each predictor's kernel block (``predictor.cross``, and ``predictor.kernel`` where it has
    one) is rebuilt over the training inputs followed by ``X``; the query rows are the
    numbers of ``X``'s inputs there. Returns ``(rows, predictors)``.
    """
    if predictors[0] is None:
        refuse_structured(estimator, "predict before fit")
    items = validate_data(estimator, X, ensure_2d=False, dtype=None, reset=False)
    trained = predictors[0].cross.kernel.inputs.items
    inputs = _Inputs(np.concatenate([trained, items]))
    copies = []
    for predictor in predictors:
        kernel = IndexedKernel(predictor.cross.kernel.kernel, inputs)
        new = copy.copy(predictor)
        new.cross = CrossKernel(kernel, predictor.cross.Z)
        if hasattr(new, "kernel"):
            new.kernel = kernel
        copies.append(new)
    return _rows(inputs)[len(trained):], copies


def query_rows(estimator, X, predictors):
    """``(X, predictors)`` for a prediction: ``X`` validated as float64, or for structured
    inputs their row numbers and :func:`indexed_predictors`."""
    if is_structured(estimator):
        return indexed_predictors(estimator, X, predictors)
    return validate_data(estimator, X, reset=False, dtype=np.float64), predictors


# partial_fit's refusal: a stream forgets its rows, and such a model's basis is row numbers
# of the data it was fitted on, which a later batch cannot look up.
STRUCTURED_STREAM = (
    "fit on all the rows is (a stream forgets its rows, and the basis of such a kernel is "
    "row numbers of the data it was fitted on)"
)


def refuse_structured(estimator, what, available="fit, predict and log_marginal_likelihood are"):
    """A ``ValueError`` naming ``what`` is not available with a kernel on structured inputs.

    ``available`` says what the estimator does take with such a kernel (a sentence's end).
    """
    if is_structured(estimator):
        raise ValueError(
            f"{type(estimator).__name__}: {what} is not available with a kernel on structured "
            f"inputs (`kernel` {estimator.kernel} has requires_vector_input=False); "
            f"{available}."
        )
