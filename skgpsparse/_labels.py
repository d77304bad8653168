"""Class labels encoded as ``0 .. n_classes - 1``, with a clear error for mixed label types.

scikit-learn's ``LabelEncoder`` sorts the labels; labels of several types (strings beside
numbers) cannot be sorted and fail with ``'<' not supported between instances of ...``. Both
classifiers encode their labels here, so that such a ``y`` is refused with a message that
names it.
"""

from sklearn.preprocessing import LabelEncoder
from sklearn.utils.multiclass import check_classification_targets

__all__ = ["encode_labels"]


def encode_labels(y):
    """``(classes, codes)`` of the labels ``y`` (``LabelEncoder``'s ``classes_`` and codes),
    after scikit-learn's ``check_classification_targets``.

    Raises
    ------
    TypeError
        If ``y`` mixes labels of types that cannot be ordered (strings and numbers).

    Examples
    --------
    >>> import numpy as np
    >>> from skgpsparse._labels import encode_labels
    >>> classes, codes = encode_labels(np.array(["b", "a", "b"]))
    >>> classes.tolist(), codes.tolist()
    (['a', 'b'], [1, 0, 1])
    """
    encoder = LabelEncoder()
    try:
        check_classification_targets(y)
        codes = encoder.fit_transform(y)
    except TypeError as exc:
        types = sorted({type(label).__name__ for label in y.ravel()})
        raise TypeError(
            f"y mixes class labels of types {types}, which cannot be ordered; use labels of "
            "one type (all strings or all numbers)."
        ) from exc
    return encoder.classes_, codes
