"""One line describing the machine a benchmark ran on, for the headers of the result tables."""

import os
import platform
from pathlib import Path

__all__ = ["machine"]


def machine():
    """CPU model, visible logical CPUs and the Python version, e.g. for a table header."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}"
