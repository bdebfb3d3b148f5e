"""Run every ```python block of a Markdown file: doctest blocks (>>> lines with their
outputs) through doctest, other blocks with exec, each in a fresh namespace.

    python .ci/readme_examples.py README.md docs/*.md

Exit 1 (naming the block's first line) when one fails. Run from any folder: the blocks
may write files, so run it in a scratch folder.
"""

from __future__ import annotations

import doctest
import re
import sys
import traceback
from pathlib import Path

BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


def main(path: str) -> int:
    text = Path(path).read_text(encoding="utf-8")
    failed = 0
    blocks = list(BLOCK.finditer(text))
    for match in blocks:
        source = match.group(1)
        line = text[: match.start()].count("\n") + 2
        name = f"{path}:{line}"
        if ">>>" in source:
            test = doctest.DocTestParser().get_doctest(source, {}, name, path, line)
            runner = doctest.DocTestRunner(
                optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
            )
            runner.run(test)
            failed += runner.summarize(verbose=False).failed > 0
            continue
        try:
            exec(compile(source, name, "exec"), {"__name__": "__readme__"})
        except Exception:
            traceback.print_exc()
            print(f"README example failed: {name}", file=sys.stderr)
            failed += 1
    print(f"{path}: {len(blocks)} python blocks, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(max(main(path) for path in sys.argv[1:]))
