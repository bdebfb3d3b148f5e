"""MkDocs hooks: pages generated from the code, so that they cannot drift from it.

- ``<!-- formulas -->`` becomes the formula sheet that ``tsallis derive`` writes
  (tsallis/derivations/FORMULAS.md, itself generated from the SymPy derivations);
- ``<!-- cli-help -->`` becomes ``tsallis --help`` and every subcommand's help.
"""

from __future__ import annotations

import argparse
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _cli_help() -> str:
    from tsallis.cli import build_parser

    parser = build_parser()
    parts = [("tsallis --help", parser.format_help())]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                parts.append((f"tsallis {name} --help", sub.format_help()))
    return "\n".join(f"### `{title}`\n\n```text\n{text.rstrip()}\n```\n" for title, text in parts)


def on_page_markdown(markdown: str, **_: object) -> str:
    if "<!-- formulas -->" in markdown:
        sheet = (ROOT / "tsallis" / "derivations" / "FORMULAS.md").read_text(encoding="utf-8")
        body = sheet.split("# Formula sheet\n", 1)[1]  # the page has its own title
        markdown = markdown.replace("<!-- formulas -->", body)
    if "<!-- cli-help -->" in markdown:
        markdown = markdown.replace("<!-- cli-help -->", _cli_help())
    return markdown
