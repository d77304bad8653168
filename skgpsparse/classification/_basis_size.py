"""``SparseGPClassifier(max_basis="auto")``: where the classifier allows it, and its cap.

The size itself is chosen by each binary model after its fit at the stand-in size (100)
(:mod:`skgpsparse.latent.learning._basis_size`): the EP log evidence of every (learning) row
after each doubling of the basis. With more than two classes each class's model chooses its
own size: the independent fits after their own fit at 100, the shared fit under the shared
kernel and the class's bias (:mod:`skgpsparse.classification.multiclass._shared_fit`). On a
partitioned ``X`` the size is chosen where learning runs, on the rows gathered to the driver.
Under ``posterior="basis"`` ``"auto"`` is 100.
"""

import warnings

from .._auto_basis import AUTO_START, basis_cap, is_auto, row_cap
from ..latent._model import fit_memory

__all__ = ["auto_basis_cap", "auto_cap_on_rows", "auto_chooses", "stand_in"]


def auto_chooses(clf, posterior):
    """Whether ``clf.max_basis="auto"`` chooses a size under ``posterior``: under the
    all-rows posterior (its rule is the EP evidence of every row); under ``"basis"`` it is
    :data:`~skgpsparse._auto_basis.AUTO_START` (the int default before ``"auto"``)."""
    return is_auto(clf.max_basis) and posterior == "all_rows"


def auto_cap_on_rows(clf, params, n, gathered):
    """``params`` of a fit on ``n`` partitioned rows with ``basis_cap`` for ``"auto"``:
    the size is chosen where learning runs, on the rows gathered to the driver (all of them
    when ``gathered``, else the learning subsample); :func:`row_cap` of them is the cap (the
    driver holds them). With fixed hyperparameters and more rows than learning gathers (the
    selection runs on the partitions), the stand-in's size with a warning."""
    if not auto_chooses(clf, params["posterior"]):
        return params
    if not gathered and params["optimizer"] is None:
        warnings.warn(
            f"max_basis='auto' with optimizer=None on a partitioned X of {n} rows (more than "
            f"learning_rows={clf.learning_rows!r} gathers): the selection runs on the "
            f"partitions, where no size is chosen; the basis has {params['max_basis']} vectors "
            "(max_basis=100's). Pass an int max_basis, or raise learning_rows.",
            UserWarning,
        )
        return params
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
