"""Fits run one per fresh process: a study script that calls itself with ``--one``."""

import json
import subprocess
import sys

__all__ = ["fits_in_children"]


def fits_in_children(script, seeds, sets, fits):
    """Run ``python script --one NAME N_TRAIN FIT SEED`` for each seed, set and fit in
    turn, each in a fresh process (module constants a fit changes stay in it), and return
    the JSON rows the children print last, each printed as it comes.

    Parameters
    ----------
    script : str
        The study script (its ``__file__``).
    seeds : str
        Comma-separated seeds.
    sets : str
        Comma-separated ``name:n_train``.
    fits : callable
        ``fits(name)``: the fits (variants) to run on the set ``name``, in order.
    """
    rows = []
    for seed in seeds.split(","):
        for item in sets.split(","):
            name, n_train = item.split(":")
            for fit in fits(name):
                out = subprocess.run([sys.executable, script, "--one", name, n_train, fit,
                                      seed], capture_output=True, text=True, check=True)
                row = json.loads(out.stdout.strip().splitlines()[-1])
                print(json.dumps(row), flush=True)
                rows.append(row)
    return rows
