"""Result files whose tables a rerun rewrites and whose hand-written reading it keeps."""

__all__ = ["FINDINGS", "write_keeping_findings"]

#: The heading of a result file's hand-written reading: from its first occurrence on, the
#: file is kept by a rerun.
FINDINGS = "## Findings"


def write_keeping_findings(path, text):
    """Write ``text`` to ``path`` followed, after one blank line, by the ``## Findings``
    sections of the file already there (everything from the first such heading), if any.

    Parameters
    ----------
    path : pathlib.Path
        The result file (markdown).
    text : str
        The generated part: the tables and their header.
    """
    previous = path.read_text() if path.exists() else ""
    at = previous.find("\n" + FINDINGS)
    path.write_text(text.rstrip("\n") + "\n" + (previous[at:] if at >= 0 else ""))
