"""The README's Python examples run as written."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def test_python_blocks_run():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    assert blocks
    for block in blocks:
        exec(compile(block, "README.md", "exec"), {})


def test_opens_with_the_two_setup_commands():
    first = re.search(r"```bash\n(.*?)```", README.read_text(), re.S).group(1).strip().splitlines()
    assert len(first) == 2
    assert "tsallis derive" in first[0] and "tsallis verify" in first[0]
    assert first[1] == "pytest"
