"""The fenced code blocks of README.md and docs/*.md, with where they are and the
``<!-- ... -->`` comments right above them.

A block's doc-test marker, when it has one, is one of:

``<!-- doc-test: skip (why) -->``
    the harness cannot run or check it; the reason is reported.
``<!-- doc-test: elsewhere tests/PATH.py [KEY] -->``
    another test runs it: PATH must exist, mention KEY (default: PATH itself), and KEY's
    first place in the doc must lead to this block (no other block between them), which
    is how such tests find their block.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ["README.md", *sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md"))]

FENCE = re.compile(r"^(\s*)```([\w+-]*)\s*$")
COMMENT = re.compile(r"^\s*<!--(.*?)-->\s*$")
MARKER = re.compile(r"^\s*doc-test:\s*(skip|elsewhere)\b\s*(.*?)\s*$", re.S)


@dataclass(frozen=True)
class Block:
    doc: str            # "docs/rest.md"
    line: int           # 1-based line of the opening fence
    lang: str           # "" for a plain fence
    text: str           # the block's lines, fence indentation removed, ending in a newline
    comments: tuple[str, ...] = field(default=())   # comment bodies right above, top first

    @property
    def where(self) -> str:
        return f"{self.doc}:{self.line}"

    @property
    def marker(self) -> tuple[str, str] | None:
        """("skip", reason) or ("elsewhere", "PATH [KEY]"), from the comments above."""
        for comment in self.comments:
            m = MARKER.match(comment)
            if m:
                return m.group(1), m.group(2)
        return None

    @property
    def first_line(self) -> str:
        return next((line.strip() for line in self.text.splitlines() if line.strip()), "")


def blocks_of(doc: str, text: str | None = None) -> list[Block]:
    if text is None:
        text = (ROOT / doc).read_text()
    lines = text.split("\n")
    found: list[Block] = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, lang = m.group(1), m.group(2)
        j = i + 1
        while j < len(lines) and not re.match(r"^\s*```\s*$", lines[j]):
            j += 1
        if j == len(lines):
            raise AssertionError(f"{doc}:{i + 1}: a ``` block that never closes")
        body = [line[len(indent):] if line.startswith(indent) else line for line in lines[i + 1:j]]
        comments: list[str] = []
        k = i - 1
        while k >= 0 and COMMENT.match(lines[k]):
            comments.insert(0, COMMENT.match(lines[k]).group(1).strip())
            k -= 1
        found.append(Block(doc, i + 1, lang.lower(), "\n".join(body) + "\n", tuple(comments)))
        i = j + 1
    return found


def all_blocks() -> list[Block]:
    return [block for doc in DOCS for block in blocks_of(doc)]
