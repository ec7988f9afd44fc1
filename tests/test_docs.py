"""The documentation site: it builds with ``mkdocs build --strict``, and its Python examples run.

Every fenced ```` ```python ```` block of ``docs/**/*.md`` is executed: the blocks of one page in
order, in one namespace, in a temporary working directory. A block fenced
```` ```python title="not run" ```` is shown but not executed; output goes in ```` ```text ````
(or ```` ```pycon ````) blocks, which are never run.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.rglob("*.md"))

# An opening fence: up to 3 spaces, 3 or more backticks or tildes, the language, then attributes.
_FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`]*)$")


def python_blocks(text: str) -> list[tuple[int, str]]:
    """(first line number, source) of every ```python block of a Markdown page that is meant to run."""
    blocks, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, info = m["fence"], m["info"].strip()
        words = info.split(None, 1)
        lang = words[0].lstrip(".{").lower() if words else ""
        start, body = i + 1, []
        i += 1
        while i < len(lines) and not re.match(rf"^ {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}\s*$", lines[i]):
            body.append(lines[i])
            i += 1
        i += 1  # the closing fence
        if lang in ("python", "py") and "not run" not in info:
            indent = len(m["indent"])
            blocks.append((start + 1, "\n".join(line[indent:] if line[:indent].isspace() else line for line in body)))
    return blocks


def test_python_blocks_parser():
    page = (
        'text\n```python\na = 1\n```\n\n```python title="not run"\nraise SystemExit\n```\n'
        "```text\nnot python\n```\n````python\nb = a + 1\n```\nstill b\n````\n"
    )
    assert python_blocks(page) == [(3, "a = 1"), (13, "b = a + 1\n```\nstill b")]


@pytest.mark.skipif(importlib.util.find_spec("mkdocs") is None, reason="mkdocs is not installed")
def test_mkdocs_build_strict(tmp_path):
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        check=False,
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "site" / "index.html").is_file()
    assert (tmp_path / "site" / "benchmarks" / "results" / "figure1.png").is_file()


PAGES_WITH_CODE = [page for page in PAGES if python_blocks(page.read_text(encoding="utf-8"))]


def test_docs_have_examples():
    assert PAGES_WITH_CODE, "no ```python blocks found under docs/"


@pytest.mark.parametrize("page", PAGES_WITH_CODE, ids=[p.relative_to(DOCS).as_posix() for p in PAGES_WITH_CODE])
def test_python_blocks_run(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": f"docs_{page.stem}"}
    for line, source in python_blocks(page.read_text(encoding="utf-8")):
        code = compile(source, f"{page.relative_to(ROOT)}:{line}", "exec")
        try:
            exec(code, namespace)  # noqa: S102 - running the documentation's examples is the test
        except Exception as exc:  # name the page and the block in the failure
            raise AssertionError(f"the python block at {page.relative_to(ROOT)}:{line} failed: {exc!r}") from exc
