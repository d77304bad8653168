"""What ``fit`` clears first, and what a ``fit`` that fails leaves: the previous model.

scikit-learn's convention is that ``fit`` replaces every fitted attribute. An estimator whose
fit sets some attributes only in some cases (``estimators_`` for several classes, say) would
otherwise keep those of an earlier fit on other data.

A ``fit`` that raises (invalid ``X`` or ``y``, an optimizer's error, a numerical failure, an
interrupt) leaves the estimator as it was before the call: the previous model, intact and
usable, or an unfitted estimator if there was none (:func:`keeps_previous_fit`). One rule for
every estimator of the package.
"""

import functools

from sklearn.base import _fit_context

__all__ = ["fit_method", "keeps_previous_fit", "reset_fitted_state"]


def _fitted_names(estimator, private):
    params = set(estimator.get_params(deep=False))
    return [
        name for name in vars(estimator)
        if ((name.endswith("_") and not name.startswith("_")) or name in private)
        and name not in params
    ]


def reset_fitted_state(estimator, private=()):
    """Delete the fitted attributes of ``estimator``: every ``name_`` and the ``private`` names.

    Fitted attributes are the public names ending in an underscore (scikit-learn's
    convention); the private state a fit keeps is named by the estimator in ``private``.
    Other private attributes are left alone: scikit-learn sets some of its own on an estimator
    during ``fit`` (callback and metadata-routing context).
    """
    for name in _fitted_names(estimator, private):
        delattr(estimator, name)


def keeps_previous_fit(private=()):
    """Decorate a ``fit`` method so that, if it raises, the estimator is as it was before.

    The fitted attributes (public ``name_`` and the ``private`` names) are taken aside before
    the call; when the call raises, whatever it set is deleted and they are put back, so the
    previous model predicts as before (and an estimator never fitted stays unfitted, its
    ``predict`` raising ``NotFittedError`` or, for the regressor, giving the prior). A fit
    that succeeds replaces them all (:func:`reset_fitted_state`). The attributes are restored
    as the objects they were: a fit builds new ones and never changes the previous model's in
    place.
    """
    def decorate(fit):
        @functools.wraps(fit)
        def guarded(self, *args, **kwargs):
            saved = {name: vars(self)[name] for name in _fitted_names(self, private)}
            try:
                return fit(self, *args, **kwargs)
            except BaseException:
                reset_fitted_state(self, private)
                vars(self).update(saved)
                raise
        return guarded
    return decorate


def fit_method(private=()):
    """The decorator of the estimators' ``fit``: scikit-learn's ``_fit_context`` (parameter
    validation, nested validation skipped) inside :func:`keeps_previous_fit`."""
    def decorate(fit):
        return keeps_previous_fit(private)(_fit_context(prefer_skip_nested_validation=True)(fit))
    return decorate
