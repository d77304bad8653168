"""What ``fit`` clears first: the fitted attributes a previous fit left on an estimator.

scikit-learn's convention is that ``fit`` replaces every fitted attribute. An estimator whose
fit sets some attributes only in some cases (``estimators_`` for several classes, say) would
otherwise keep those of an earlier fit on other data.
"""

__all__ = ["reset_fitted_state"]


def reset_fitted_state(estimator, private=()):
    """Delete the fitted attributes of ``estimator``: every ``name_`` and the ``private`` names.

    Fitted attributes are the public names ending in an underscore (scikit-learn's
    convention); the private state a fit keeps is named by the estimator in ``private``.
    Other private attributes are left alone: scikit-learn sets some of its own on an estimator
    during ``fit`` (callback and metadata-routing context).
    """
    params = set(estimator.get_params(deep=False))
    for name in list(vars(estimator)):
        fitted = name.endswith("_") and not name.startswith("_")
        if (fitted or name in private) and name not in params:
            delattr(estimator, name)
