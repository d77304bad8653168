"""What ``fit`` clears first: every attribute a previous fit left on an estimator.

scikit-learn's convention is that ``fit`` replaces every fitted attribute. An estimator whose
fit sets some attributes only in some cases (``estimators_`` for several classes, say) would
otherwise keep those of an earlier fit on other data.
"""

__all__ = ["reset_fitted_state"]

# Attributes scikit-learn itself keeps on an estimator between fits (output and metadata
# routing configuration): not fitted state.
_KEEP_PREFIXES = ("_sklearn", "_metadata")


def reset_fitted_state(estimator):
    """Delete every attribute of ``estimator`` that is not a constructor parameter."""
    params = set(estimator.get_params(deep=False))
    for name in list(vars(estimator)):
        if name not in params and not name.startswith(_KEEP_PREFIXES):
            delattr(estimator, name)
