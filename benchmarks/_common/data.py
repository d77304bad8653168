"""Locate and load the offline benchmark datasets (``.npz`` files) used by the benchmark scripts."""

import os
from pathlib import Path

import numpy as np

__all__ = ["dataset_dir", "load_dataset"]

# Environment variable that overrides the default location of the datasets folder.
ENV_VAR = "SKGPSPARSE_DATASETS"


def dataset_dir():
    """Return the folder holding the benchmark ``.npz`` files.

    The folder is ``$SKGPSPARSE_DATASETS`` if that variable is set, otherwise
    ``<repo>/../shared/datasets`` (``Path(__file__).resolve().parents[3] / "shared" /
    "datasets"``).

    Returns
    -------
    path : pathlib.Path
        The datasets folder.

    Raises
    ------
    FileNotFoundError
        If the folder does not exist.
    """
    env = os.environ.get(ENV_VAR)
    path = Path(env) if env else Path(__file__).resolve().parents[3] / "shared" / "datasets"
    if not path.is_dir():
        raise FileNotFoundError(
            f"benchmark datasets folder not found: expected a directory at {str(path)!r}; "
            f"set the {ENV_VAR} environment variable to the folder holding the .npz files."
        )
    return path


def load_dataset(name):
    """Load one benchmark dataset by name.

    Parameters
    ----------
    name : str
        File name with or without the ``.npz`` suffix, e.g. ``"kin40k"``.

    Returns
    -------
    data : numpy.lib.npyio.NpzFile
        The arrays ``X``, ``y`` and the split information (see the datasets README).

    Raises
    ------
    FileNotFoundError
        If the file is not in :func:`dataset_dir`; the message lists the available names.
    """
    folder = dataset_dir()
    stem = name.removesuffix(".npz")
    path = folder / f"{stem}.npz"
    if not path.is_file():
        available = sorted(p.stem for p in folder.glob("*.npz"))
        raise FileNotFoundError(
            f"dataset {name!r} not found in {str(folder)!r}; available: {available}"
        )
    return np.load(path)
