"""Line numbers of tagged lines (`# LINE: tag`) in the test modules, so tests can read the
user's file and line in a message without hard-coding numbers."""

from __future__ import annotations

import re
from pathlib import Path


def line_of(path: str, tag: str) -> str:
    """`path:lineno` of the line of `path` ending in `# LINE: tag`."""
    text = Path(path).read_text().splitlines()
    hits = [i + 1 for i, line in enumerate(text) if line.rstrip().endswith(f"# LINE: {tag}")]
    assert len(hits) == 1, (tag, hits)
    return f"{path}:{hits[0]}"


def escaped(s: str) -> str:
    return re.escape(s)
