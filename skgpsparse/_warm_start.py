"""When ``warm_start=True`` may reuse the previous fit: the same kernel, inputs and width.

A warm start begins where the previous fit ended (its hyperparameters, its basis). That is
meaningful only for the same model on the same kind of data: the kernel's structure (its
classes, the parameters that are not learned, which hyperparameters are fixed and their
bounds; not their values, which the previous fit learned), the kind of input (numeric rows,
or the structured inputs of a kernel with ``requires_vector_input=False``, whose basis is
made of row numbers of the previous fit's data) and the number of features. Otherwise the
fit starts cold with a :class:`WarmStartWarning` that says which of these changed.
"""

import warnings
from typing import NamedTuple

import numpy as np
from sklearn.gaussian_process.kernels import Kernel
from sklearn.utils.validation import _num_features

__all__ = ["FitSignature", "WarmStartWarning", "fit_signature", "warm_start_allowed"]


class WarmStartWarning(UserWarning):
    """``warm_start=True`` could not reuse the previous fit; the fit started cold."""


class FitSignature(NamedTuple):
    """What a warm start must find unchanged since the previous fit."""

    kernel: tuple
    inputs: str
    n_features: object
    scheme: object = None  # the classifier's multi_class (its binary models' layout)


def _describe(value):
    if isinstance(value, Kernel):
        return type(value).__name__
    if isinstance(value, np.ndarray):
        return ("array", value.shape, value.tolist())
    return repr(value)


def kernel_structure(kernel):
    """The kernel without its hyperparameters' values: classes, fixed parameters, bounds.

    Two kernels with equal structures differ only in the values a fit learns; ``None`` (the
    estimator's default kernel) is its own structure.

    Examples
    --------
    >>> from sklearn.gaussian_process.kernels import RBF, Matern
    >>> from skgpsparse._warm_start import kernel_structure
    >>> kernel_structure(RBF(1.0)) == kernel_structure(RBF(3.0))
    True
    >>> kernel_structure(RBF(1.0)) == kernel_structure(RBF(1.0, length_scale_bounds="fixed"))
    False
    >>> kernel_structure(Matern(nu=1.5)) == kernel_structure(Matern(nu=2.5))
    False
    """
    if kernel is None:
        return ("default",)
    values = {h.name for h in kernel.hyperparameters}
    params = kernel.get_params(deep=True)
    fixed = tuple((h.name, h.n_elements, h.fixed) for h in kernel.hyperparameters)
    return (type(kernel).__name__, fixed) + tuple(
        (name, _describe(value)) for name, value in sorted(params.items()) if name not in values
    )


def fit_signature(kernel, X, scheme=None):
    """The :class:`FitSignature` of a fit with the constructor's ``kernel`` on ``X``
    (``scheme``: the classifier's ``multi_class``)."""
    if kernel is not None and not getattr(kernel, "requires_vector_input", True):
        return FitSignature(kernel_structure(kernel), "structured", None, scheme)
    try:  # scikit-learn's reading (arrays, frames, lists; no array conversion)
        width = _num_features(X)
    except TypeError:  # not 2-D: validation refuses it, or a one-feature fit warns on it
        width = None
    return FitSignature(kernel_structure(kernel), "numeric", width, scheme)


def warm_start_allowed(estimator, signature):
    """Whether ``estimator``'s fit of ``signature`` may start from its previous fit.

    False (with a :class:`WarmStartWarning` saying why) when the previous fit's signature
    (``estimator._fit_signature``) differs, or when the inputs are structured (the previous
    basis is row numbers of the previous data).
    """
    previous = getattr(estimator, "_fit_signature", None)
    if previous is None:
        return False
    if previous.kernel != signature.kernel:
        why = "the kernel changed (its class, its fixed parameters or its bounds)"
    elif previous.inputs != signature.inputs:
        why = f"the inputs changed from {previous.inputs} to {signature.inputs}"
    elif signature.inputs == "structured":
        why = ("a kernel on structured inputs has a basis of row numbers of the previous "
               "data, which a new X does not share")
    elif previous.n_features != signature.n_features:
        why = (f"the previous fit had {previous.n_features} features, X has "
               f"{signature.n_features}")
    elif previous.scheme != signature.scheme:
        why = f"multi_class changed from {previous.scheme!r} to {signature.scheme!r}"
    else:
        return True
    warnings.warn(
        f"{type(estimator).__name__}: warm_start=True ignored because {why}; fitting from "
        "scratch.",
        WarmStartWarning,
        stacklevel=3,
    )
    return False
