"""The memory a fit will need, and the check against what the machine has, before allocating.

Each estimator family describes its fit's largest arrays as :class:`FitMemory` (named parts in
bytes, each with the parameter that lowers it) and calls :meth:`FitMemory.check` before its
first large allocation: a fit that cannot succeed fails at once with a ``MemoryError`` that
gives the figure, the memory available and what to lower, instead of growing for minutes
and failing deep inside a gradient. The available memory is the smallest of what
``/proc/meminfo`` calls ``MemAvailable`` (the physical memory from ``os.sysconf`` where
that file does not exist) and what is left under a cgroup's ``memory.max``; where none of
them is known nothing is checked.
"""

import os

import numpy as np

__all__ = ["FitMemory", "available_memory", "gigabytes", "largest_fitting", "state_nbytes"]

_MEMINFO = "/proc/meminfo"
_CGROUP_MAX = "/sys/fs/cgroup/memory.max"
_CGROUP_CURRENT = "/sys/fs/cgroup/memory.current"


def gigabytes(n_bytes):
    """``n_bytes`` as a short figure in GB (1e9 bytes)."""
    return f"{n_bytes / 1e9:.1f} GB" if n_bytes >= 1e8 else f"{n_bytes / 1e9:.3f} GB"


def _read_int(path):
    """The integer in a one-number file (``None`` if absent, unreadable or ``max``)."""
    try:
        with open(path) as f:
            text = f.read().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _mem_available():
    """``MemAvailable`` of ``/proc/meminfo`` in bytes, or None."""
    try:
        with open(_MEMINFO) as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024  # the file counts kB
    except (OSError, ValueError, IndexError):
        return None
    return None


def _physical_memory():
    """Physical memory from ``os.sysconf`` (pages times page size), or None."""
    try:
        pages, size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None
    return pages * size if pages > 0 and size > 0 else None


def available_memory():
    """Bytes a fit can still allocate, and where the figure comes from; ``(None, "")`` if unknown.

    The smallest of ``MemAvailable`` (else the physical memory) and the room left under the
    cgroup's ``memory.max`` (its limit minus ``memory.current``) when a limit is set.
    """
    figures = []
    free = _mem_available()
    if free is not None:
        figures.append((free, "MemAvailable"))
    else:
        physical = _physical_memory()
        if physical is not None:
            figures.append((physical, "physical memory"))
    limit = _read_int(_CGROUP_MAX)
    if limit is not None:
        used = _read_int(_CGROUP_CURRENT) or 0
        figures.append((max(limit - used, 0), f"cgroup memory.max {gigabytes(limit)}"))
    if not figures:
        return None, ""
    return min(figures)


class FitMemory:
    """A fit's largest arrays: named parts in bytes, each with the parameter that lowers it.

    Parameters
    ----------
    estimator : str
        The estimator's name, for the message.
    parts : list of (str, float, str or tuple of str)
        ``(what, bytes, remedies)``: a description of the arrays, their size, and what shrinks
        them (e.g. ``"lower `max_basis` (now 500)"``, or several such).
    resize : callable, default=None
        ``resize(bytes_available)`` returns a sentence saying which setting would fit (or
        ``""``); appended to the message.

    Examples
    --------
    >>> need = FitMemory("Model", [("the kernel block", 8e9, "lower `max_basis` (now 1000)")])
    >>> need.total
    8000000000.0
    >>> need.check(available=2e9, source="test")
    Traceback (most recent call last):
    ...
    MemoryError: Model.fit needs about 8.0 GB (the kernel block 8.0 GB) but 2.0 GB is \
available (test). Lower `max_basis` (now 1000).
    """

    def __init__(self, estimator, parts, resize=None):
        self.estimator, self.parts, self.resize = estimator, list(parts), resize

    @property
    def total(self):
        """Bytes of all parts together (held at the same time at the fit's peak)."""
        return float(sum(size for _, size, _ in self.parts))

    def summary(self):
        """``"about 1.2 GB"``: the figure verbose fits print first."""
        return f"about {gigabytes(self.total)}"

    def check(self, available=None, source=None):
        """Raise ``MemoryError`` if the fit needs more than ``available`` bytes.

        ``available=None`` reads :func:`available_memory`; an unknown figure checks nothing.
        """
        if available is None:
            available, source = available_memory()
            if available is None:
                return
        total = self.total
        if total <= available:
            return
        parts = sorted(self.parts, key=lambda part: -part[1])
        detail = ", ".join(f"{what} {gigabytes(size)}" for what, size, _ in parts if size)
        advice = []  # what lowers the parts that matter (a tenth of the total or more)
        for _, size, remedies in parts:
            remedies = (remedies,) if isinstance(remedies, str) else remedies
            if size >= 0.1 * total:
                advice += [remedy for remedy in remedies if remedy not in advice]
        advice = ", or ".join(advice)
        message = (
            f"{self.estimator}.fit needs about {gigabytes(total)} ({detail}) but "
            f"{gigabytes(available)} is available ({source}). {advice[:1].upper()}{advice[1:]}."
        )
        if self.resize is not None:
            hint = self.resize(available)
            if hint:
                message = f"{message} {hint}"
        raise MemoryError(message)


def largest_fitting(need, low, high, available):
    """The largest integer ``k`` in ``[low, high]`` with ``need(k) <= available``, or None.

    ``need`` is non-decreasing in ``k`` (a bisection).
    """
    if need(low) > available:
        return None
    while low < high:
        mid = (low + high + 1) // 2
        if need(mid) <= available:
            low = mid
        else:
            high = mid - 1
    return low


def max_basis_advice(need, max_basis):
    """A :class:`FitMemory` ``resize``: the largest ``max_basis`` whose fit needs at most the
    bytes available, ``need(q)`` being the bytes of a fit with ``q`` basis vectors."""

    def resize(available):
        q = largest_fitting(need, 1, max_basis, available)
        if q is None:
            return f"Even max_basis=1 needs {gigabytes(need(1))}: fit on fewer rows."
        return f"max_basis={q} would need about {gigabytes(need(q))}."

    return resize


def state_nbytes(obj, _seen=None):
    """Bytes of the numpy arrays reachable from ``obj``'s attributes, each array counted once.

    The size of a fitted estimator's state (its attributes, the objects they hold, lists,
    tuples and dicts), to check that it does not grow with the rows a stream has passed
    through it.

    Examples
    --------
    >>> import numpy as np
    >>> from types import SimpleNamespace
    >>> from skgpsparse._memory import state_nbytes
    >>> a = np.zeros(10)
    >>> state_nbytes(SimpleNamespace(a=a, same=[a], b=SimpleNamespace(c=np.zeros(5))))
    120
    """
    seen = set() if _seen is None else _seen
    if id(obj) in seen:
        return 0
    seen.add(id(obj))
    if isinstance(obj, np.ndarray):
        return obj.nbytes
    if isinstance(obj, (list, tuple)):
        return sum(state_nbytes(v, seen) for v in obj)
    if isinstance(obj, dict):
        return sum(state_nbytes(v, seen) for v in obj.values())
    if hasattr(obj, "__dict__") and not isinstance(obj, type):
        return state_nbytes(vars(obj), seen)
    return 0
