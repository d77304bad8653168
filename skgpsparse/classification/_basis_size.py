"""``SparseGPClassifier(max_basis="auto")``: where the classifier allows it, and its cap.

The size itself is chosen by each binary model after its fit at the stand-in size (100)
(:mod:`skgpsparse.latent.learning._basis_size`): the EP log evidence of every (learning) row
after each doubling of the basis. With more than two classes each class's model chooses its
own size: the independent fits after their own fit at 100, the shared fit under the shared
kernel and the class's bias (from 50) (:mod:`skgpsparse.classification.multiclass._shared_fit`). On a partitioned
``X`` the size is chosen where learning runs, on the rows gathered to the driver.
"""

from .._auto_basis import AUTO_START, basis_cap, is_auto, row_cap
from ..latent._model import fit_memory

__all__ = ["auto_basis_cap", "auto_cap_on_rows", "check_auto", "stand_in"]


def check_auto(clf, posterior):
    """A ValueError when ``clf.max_basis="auto"`` cannot run: under ``posterior="basis"``
    (the rule is the all-rows EP evidence)."""
    if is_auto(clf.max_basis) and posterior != "all_rows":
        raise ValueError(
            "max_basis='auto' needs posterior='all_rows' (its rule is the EP evidence of "
            f"every row); got posterior={clf.posterior!r}. Pass an int max_basis."
        )


def auto_cap_on_rows(clf, params, n, gathered):
    """``params`` of a fit on ``n`` partitioned rows with ``basis_cap`` for ``"auto"``:
    the size is chosen where learning runs, on the rows gathered to the driver (all of them
    when ``gathered``, else the learning subsample); :func:`row_cap` of them is the cap (the
    driver holds them). With fixed hyperparameters and more rows than learning gathers (the
    selection runs on the partitions), a ValueError."""
    if not is_auto(clf.max_basis):
        return params
    if not gathered and params["optimizer"] is None:
        raise ValueError(
            "max_basis='auto' with optimizer=None on a partitioned X needs every row gathered "
            f"to the driver (at most learning_rows={clf.learning_rows!r} rows; got {n}): "
            "the selection then runs on the partitions, where no size is chosen. Pass an int "
            "max_basis, or raise learning_rows."
        )
    return dict(params, basis_cap=row_cap(n))


def stand_in(clf, n):
    """The int ``max_basis`` of ``clf`` on ``n`` rows before a size is chosen: its own, or
    :data:`~skgpsparse._auto_basis.AUTO_START` (at most ``n``) for ``"auto"``, whose
    learning rows and starts are then today's default's."""
    return min(AUTO_START, n) if is_auto(clf.max_basis) else clf.max_basis


def auto_basis_cap(n, n_features, n_theta, learn, working_set, n_parallel=1, available=None):
    """The largest basis ``"auto"`` tries on ``n`` rows: 800, half the rows and the largest
    whose fit (:func:`~skgpsparse.latent._model.fit_memory` of the all-rows posterior, with
    ``n_parallel`` fits at once) fits in the memory ``available`` (None: the machine's)."""
    def need(q):
        return fit_memory(n, n_features, q, n_theta, learn, working_set, n_parallel,
                          all_rows=True).total

    return basis_cap(n, need, available)
