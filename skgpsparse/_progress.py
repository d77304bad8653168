"""Progress of a long fit on standard output, throttled in time (the estimators' ``verbose``).

With ``verbose >= 1`` a fit prints a first line as it starts (rows, basis size, the memory its
kernel block takes), then at most one line every ``interval`` seconds from the steps of each
phase (greedy selection, hyperparameter learning, basis refinement, EP sweeps, noise
calibration) and every line its outer loop asks for; with ``verbose >= 2`` every step prints.
"""

import time

import numpy as np

__all__ = ["Progress", "block_megabytes"]

# Seconds between two lines of the greedy steps at verbose=1.
INTERVAL = 5.0


def _now():
    """Seconds since an arbitrary origin (a function, so that tests can replace the clock)."""
    return time.monotonic()


def block_megabytes(n_rows, max_basis):
    """Megabytes of the ``n x max_basis`` float64 block that the fit's state keeps."""
    return 8.0 * n_rows * max_basis / 2**20


class Progress:
    """Print ``[name] message`` lines for a fit, at most one per ``interval`` for steps.

    Parameters
    ----------
    name : str
        Prefix of every line, e.g. the estimator's class name.
    verbose : int
        0 prints nothing; 1 the start, the outer loop and a step line every ``interval``
        seconds; 2 and more every step.
    interval : float, default=INTERVAL
        Seconds between two step lines at ``verbose=1``.
    clock : callable, default=None
        Seconds since an arbitrary origin; ``None`` means ``time.monotonic``.

    Examples
    --------
    >>> progress = Progress("Model", verbose=1)
    >>> progress.line("start: 1000 rows")
    [Model] start: 1000 rows
    >>> progress.step(lambda: "step 1")  # less than 5 s later: nothing
    """

    def __init__(self, name, verbose, interval=INTERVAL, clock=None):
        self.name, self.verbose, self.interval = name, int(verbose), interval
        self.clock = _now if clock is None else clock
        self._start = self._last = self.clock()

    def line(self, message):
        """Print ``message`` now (at ``verbose >= 1``)."""
        if self.verbose >= 1:
            print(f"[{self.name}] {message}", flush=True)
            self._last = self.clock()

    def step(self, message):
        """Print ``message()`` if ``verbose >= 2`` or ``interval`` seconds passed since a line.

        ``message`` is a callable, so that a step that prints nothing formats nothing.
        """
        if self.verbose >= 2 or (
            self.verbose == 1 and self.clock() - self._last >= self.interval
        ):
            self.line(f"{message()} ({self.clock() - self._start:.1f} s)")

    def counting(self, phase, func):
        """``func`` that reports ``phase: evaluation k, value v`` as a :meth:`step` per call.

        For objectives handed to an optimiser (which calls them an unknown number of times):
        ``v`` is the value returned, or its first element when a tuple (value, gradient);
        a value that is not a scalar is not shown.

        Examples
        --------
        >>> progress = Progress("Model", verbose=2, clock=lambda: 0.0)
        >>> square = progress.counting("search", lambda x: (x * x, 2 * x))
        >>> square(3.0)
        [Model] search: evaluation 1, value 9 (0.0 s)
        (9.0, 6.0)
        """
        count = 0

        def reporting(*args, **kwargs):
            nonlocal count
            out = func(*args, **kwargs)
            count += 1
            value = out[0] if isinstance(out, tuple) else out
            self.step(lambda: f"{phase}: evaluation {count}"
                      + (f", value {float(value):.6g}" if np.ndim(value) == 0 else ""))
            return out

        return reporting
