"""Entry point of ``python -m skgpsparse``: the sparse-versus-full GP report."""

import sys

from ._cli import main

if __name__ == "__main__":
    sys.exit(main())
