"""The classifier's fit on rows held in partitions by a row backend (``skgpsparse.rows``).

:func:`fit_partitioned` has the backend check ``X`` and the labels ``y``, opens a row store on
their partitions (each row chunk with its labels where it lives, e.g. in an actor on the cluster
worker that computed it) and fits the binary models (one, or one per class against the rest) with
:class:`PartitionedBinary`: the two-loop design of the in-memory binary model on a
:class:`~skgpsparse.inference._adf_partitioned.PartitionedADFState`, its NLP objective a sum over
the partitions (:mod:`skgpsparse.latent.objectives._nlp_loss_partitioned`). The fitted
models are ordinary ones; the partitions are released when the fit ends.
"""

import numpy as np
from sklearn.utils import check_random_state

from ..._row_weights import fit_weights, refuse_weights
from ...inference._adf_partitioned import PartitionedADFState, label_counts
from ...inference._ep_partitioned import set_row_weights
from ...latent._model import LatentSparseGP
from ...latent._partitioned import fit_binary_on_rows, gathered_rows
from ...latent.objectives._nlp_loss_partitioned import partitioned_nlp_loss
from ...rows._store import row_centre
from .._basis_size import auto_cap_on_rows
from .._fitting import binary_params, store_binary, store_one_vs_rest
from ..multiclass._combination import set_logit_weight
from ..multiclass._one_vs_rest import multi_class_mode, one_vs_rest
from ._shared_fit import fit_shared_on_rows

__all__ = ["PartitionedBinary", "fit_partitioned", "fit_rows"]


class PartitionedBinary(LatentSparseGP):
    """The binary model of class ``positive`` against the rest, on the partitions of ``rows``."""

    def __init__(self, rows, positive, centre, **params):
        super().__init__(**params)
        self.rows, self.positive, self.centre = rows, positive, centre

    def _select(self, kernel, X, y, bias, rng):
        state = PartitionedADFState(
            kernel, self.rows, self.positive, bias, self.max_basis, centre=self.centre,
            likelihood=self.likelihood)
        state.speculate(self.selector, rng)  # each add also fetches the next working set
        return self._select_into(state, rng)

    def _initial_bias(self, kernel, X, y):
        # initial_bias from the partitions' mean prior variance and fraction of positives
        mean_k, frac = label_counts(self.rows, kernel, self.positive)
        return self.likelihood.initial_bias(frac, mean_k)

    def _objective(self, kernel, bias, X, y, basis, prec, mean, eval_gradient=False):
        return partitioned_nlp_loss(
            kernel, self.rows, self.positive, bias, basis, mean, prec,
            likelihood=self.likelihood, eval_gradient=eval_gradient,
        )

    def _set_fitted_basis(self, X, y):
        X_u, labels = self.rows.take(self.basis_indices_)
        self.basis_vectors_ = np.asarray(X_u, dtype=np.float64)
        self._basis_labels = np.where(labels == self.positive, 1.0, -1.0)
        self._set_predictive_factors()
        self.log_marginal_likelihood_value_ = float(self.log_marginal_likelihood())


def fit_rows(clf, rows, classes, weights=None):
    """Fit ``clf`` (a SparseGPClassifier) on a row store whose ``y`` holds the labels.

    ``posterior="all_rows"`` (and ``"auto"``): the in-memory model, learned on the driver over the
    rows gathered from the partitions, EP over every row on the partitions
    (:mod:`skgpsparse.latent._partitioned`); ``"basis"``:
    :class:`PartitionedBinary`. More than two classes: the shared one-vs-rest fit
    (``multi_class="auto"``), in memory where every row is gathered to the driver (at most
    ``learning_rows``), else learned on the gathered subsample with each class's EP on the
    partitions (:mod:`skgpsparse.classification.partitioned._shared_fit`); with fixed
    hyperparameters there, the independent fits (with a warning). ``weights``: the rows'
    weights (:mod:`skgpsparse._row_weights`), the all-rows posterior only: rows gathered to
    the driver are fitted in memory with theirs (rows of zero weight dropped, as in memory),
    and EP on the partitions weighs every row (a zero weight removes the row's terms).
    """
    n_classes = len(classes)
    all_rows = clf.posterior in ("auto", "all_rows")
    params = binary_params(
        clf, rows.n, rows.n_features, n_classes, posterior=None if all_rows else "basis"
    )
    rng = check_random_state(clf.random_state)
    centre = row_centre(rows)
    gathered = gathered_rows(rows, params) if all_rows else None
    params = auto_cap_on_rows(clf, params, rows.n, gathered is not None)
    if weights is not None:
        if gathered is None and params["optimizer"] is None:
            refuse_weights(clf, weights, "optimizer=None on a partitioned array with more rows "
                           "than learning_rows (its basis selection on the partitions)",
                           "fit in memory, or raise learning_rows to the number of rows")
        set_row_weights(rows, weights)
        params = dict(params, sample_weight=weights)
        if gathered is not None:  # the in-memory fit, rows of zero weight dropped
            kept = weights > 0
            gathered = gathered[0][kept], gathered[1][kept]
            kept_weights = weights[kept]
            params["sample_weight"] = None if np.all(kept_weights == 1.0) else kept_weights

    def fit_one(positive, rng):
        def partitioned():
            return PartitionedBinary(rows, positive, centre, **params)

        if all_rows:
            model = fit_binary_on_rows(params, rows, positive, rng, gathered, partitioned)
        else:
            model = partitioned().fit(rows, None, rng)
        model.rows = None  # the fitted model keeps no handle on the cluster
        return model

    if n_classes == 2:
        return store_binary(clf, fit_one(classes[1], rng))
    if gathered is not None and multi_class_mode(clf, params["posterior"]) == "shared":
        # every row on the driver: the in-memory shared fit itself
        X, labels = gathered
        y_enc = np.searchsorted(classes, labels)
        models, clf.multi_class_ = one_vs_rest(clf, [params], (0, clf.validation_fraction), X,
                                               y_enc, rng)
        set_logit_weight(clf, models, X.shape[0], lambda at: (X[at], y_enc[at]),
                         params.get("sample_weight"))
        return store_one_vs_rest(clf, models)
    clf.multi_class_ = multi_class_mode(clf, params["posterior"],
                                        fixed_on_partitions=params["optimizer"] is None)
    if clf.multi_class_ == "shared":
        # learning and selections on the gathered subsample, each class's EP on the partitions
        models = fit_shared_on_rows(params, rows, classes, rng, clf.n_jobs)

        def take(at):  # the rows choosing the combination, gathered from the partitions
            X_at, labels_at = rows.take(at)
            return X_at, np.searchsorted(classes, labels_at)

        set_logit_weight(clf, models, rows.n, take, weights)
        return store_one_vs_rest(clf, models)
    seeds = rng.randint(np.iinfo(np.int32).max, size=n_classes)
    clf.logit_weight_ = 0.0  # the independent fits: scikit-learn's normalisation
    return store_one_vs_rest(
        clf, [fit_one(classes[k], check_random_state(seeds[k])) for k in range(n_classes)]
    )


def fit_partitioned(clf, backend, X, y, sample_weight=None):
    """Fit ``clf`` on the rows ``X`` and labels ``y`` held by the row ``backend``, with the
    rows' ``sample_weight`` (and ``clf.class_weight``) if given."""
    unsupported = {
        "site_update": (clf.site_update, "moment_matching"),
        "hyperparameter_objective": (clf.hyperparameter_objective, "nlp"),
        "n_restarts": (clf.n_restarts, 0),
    }
    for name, (value, supported) in unsupported.items():
        if value != supported:
            raise ValueError(
                f"A fit on {backend.name} supports {name}={supported!r} only, got {value!r}."
            )
    X, y, classes = backend.validate(X, y, min_rows=2, dtypes=(np.float64,), labels=True)
    if classes.size < 2:
        raise ValueError(
            f"{type(clf).__name__} requires 2 or more distinct classes; got {classes.size} "
            "class."
        )
    if clf.multi_class == "one_vs_one" and classes.size > 2:
        raise ValueError(
            "multi_class='one_vs_one' is fitted in memory only (each pair on the rows of its "
            "two classes); on a partitioned array use multi_class='auto' or 'one_vs_rest'."
        )
    clf.classes_, clf.n_features_in_ = classes, X.shape[1]
    weights = _weights(clf, backend, X, y, sample_weight)
    with backend.open(X, y) as rows:
        return fit_rows(clf, rows, classes, weights)


def _weights(clf, backend, X, y, sample_weight):
    """The rows' weights on the driver (:func:`~skgpsparse._row_weights.fit_weights`; the
    labels are gathered for ``class_weight``), or None; refused by ``posterior="basis"``."""
    if sample_weight is None and clf.class_weight is None:
        return None
    if clf.posterior == "basis":
        refuse_weights(clf, sample_weight, "posterior='basis' on a partitioned array",
                       "fit in memory, or use posterior='all_rows'")
    if backend.owns(sample_weight):
        sample_weight = backend.gather(sample_weight)
    labels = None if clf.class_weight is None else np.asarray(backend.gather(y))
    return fit_weights(sample_weight, np.empty((X.shape[0], 0)), labels, clf.class_weight)
