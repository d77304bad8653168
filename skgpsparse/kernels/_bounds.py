"""Learned hyperparameters at their bounds: scikit-learn's warning, and what a default expects.

After a fit scikit-learn's estimators call ``Kernel._check_bounds_params``, which warns
(``ConvergenceWarning``) for every free hyperparameter whose log value is close to a log
bound: widening the bound may find a better value. For a kernel the user passed that is the
right advice, and :func:`warn_at_bounds` gives it unchanged. For a kernel the package chose,
some bounds are reached by design and the advice cannot be acted on: a per-feature length
scale at its upper bound is a feature the fit switched off (the kernel is flat along it, the
right answer for an irrelevant feature), and the classifier's default amplitude stops at its
cap on purpose. Those are ``expected`` and reported to the caller instead of warned about;
any other bound the default reaches still warns.
"""

import warnings
from typing import NamedTuple

import numpy as np
from sklearn.exceptions import ConvergenceWarning

__all__ = ["AtBound", "describe_at_bounds", "hyperparameters_at_bounds", "warn_at_bounds"]


class AtBound(NamedTuple):
    """Dimension ``dim`` of hyperparameter ``name`` (of ``n_elements``) at its ``side``
    (``"lower"`` or ``"upper"``) bound ``bound``."""

    name: str
    dim: int
    side: str
    bound: float
    n_elements: int = 1


def hyperparameters_at_bounds(kernel):
    """Every free hyperparameter of ``kernel`` at a bound, as scikit-learn judges it.

    The test is ``Kernel._check_bounds_params``'s: ``np.isclose`` of ``theta`` (log values)
    and the log bounds, the lower bound first.

    Returns
    -------
    list of AtBound
        In the order of ``kernel.hyperparameters`` and their dimensions.

    Examples
    --------
    >>> from sklearn.gaussian_process.kernels import RBF, ConstantKernel as C
    >>> from skgpsparse.kernels._bounds import hyperparameters_at_bounds
    >>> [at[:4] for at in hyperparameters_at_bounds(C(100.0, (1e-5, 100.0)) * RBF([1.0, 1e5]))]
    [('k1__constant_value', 0, 'upper', 100.0), ('k2__length_scale', 1, 'upper', 100000.0)]
    """
    close = np.isclose(kernel.bounds, np.atleast_2d(kernel.theta).T)
    found, idx = [], 0
    for hyp in kernel.hyperparameters:
        if hyp.fixed:
            continue
        for dim in range(hyp.n_elements):
            for side, col in (("lower", 0), ("upper", 1)):
                if close[idx, col]:
                    found.append(AtBound(hyp.name, dim, side, float(hyp.bounds[dim][col]),
                                         hyp.n_elements))
                    break
            idx += 1
    return found


def _warn(at):
    # scikit-learn's message (Kernel._check_bounds_params), word for word
    verb = "Decreasing" if at.side == "lower" else "Increasing"
    warnings.warn(
        f"The optimal value found for dimension {at.dim} of parameter {at.name} is close to "
        f"the specified {at.side} bound {at.bound}. {verb} the bound and calling fit again "
        "may find a better value.",
        ConvergenceWarning,
    )


def _expected(at, expected):
    """Whether ``at`` is a bound the default kernel reaches by design: of a name in
    ``expected``; an upper bound, and for a length scale only one of a per-feature vector (a
    single length scale at its upper bound leaves no feature in the model: that still warns);
    or a latent ``WhiteKernel``'s lower bound (the regressor's default for counts: no random
    effect per row, the counts are not over-dispersed)."""
    if at.name not in expected:
        return False
    leaf = at.name.split("__")[-1]
    if leaf == "noise_level":
        return at.side == "lower"
    return at.side == "upper" and (leaf != "length_scale" or at.n_elements > 1)


def warn_at_bounds(kernel, expected=()):
    """scikit-learn's ``ConvergenceWarning`` for each learned hyperparameter at a bound,
    except the upper bounds the package's default kernel reaches by design.

    Parameters
    ----------
    kernel : Kernel
        The fitted kernel.
    expected : tuple of str, default=()
        Names of hyperparameters (``"k2__length_scale"``) whose upper bound is not warned
        about: an amplitude's cap, or a per-feature length scale's (a feature switched off;
        a single length scale at its bound still warns). Empty for a kernel the user passed,
        which scikit-learn's ``kernel._check_bounds_params()`` then checks itself.

    Returns
    -------
    list of AtBound
        The expected ones reached (not warned about), for the caller to report.

    Examples
    --------
    >>> import warnings
    >>> from sklearn.gaussian_process.kernels import RBF, ConstantKernel as C
    >>> from skgpsparse.kernels._bounds import warn_at_bounds
    >>> kernel = C(2.0) * RBF([1.0, 1e5])
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     quiet = warn_at_bounds(kernel, expected=("k2__length_scale",))
    >>> [at.dim for at in quiet], len(caught)
    ([1], 0)
    """
    if not expected:
        kernel._check_bounds_params()
        return []
    quiet = []
    for at in hyperparameters_at_bounds(kernel):
        if _expected(at, expected):
            quiet.append(at)
        else:
            _warn(at)
    return quiet


def describe_at_bounds(quiet):
    """One line naming the hyperparameters in ``quiet`` (from :func:`warn_at_bounds`),
    length scales as the features they switch off, for the estimators' verbose output.

    Examples
    --------
    >>> from skgpsparse.kernels._bounds import AtBound, describe_at_bounds
    >>> describe_at_bounds([AtBound("k2__length_scale", 3, "upper", 1e5, 20),
    ...                     AtBound("k2__length_scale", 5, "upper", 1e5, 20)])
    'features [3, 5] switched off (k2__length_scale at its upper bound 100000)'
    """
    by_name = {}
    for at in quiet:
        by_name.setdefault((at.name, at.side, at.bound), []).append(at.dim)
    parts = []
    for (name, side, bound), dims in by_name.items():
        if name.split("__")[-1] == "length_scale":
            parts.append(f"features {dims} switched off ({name} at its {side} bound {bound:g})")
        else:
            parts.append(f"{name} at its {side} bound {bound:g}")
    return "; ".join(parts)
