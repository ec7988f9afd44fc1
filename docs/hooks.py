"""MkDocs hook: publish the benchmark reports of ``benchmarks/results/`` as part of the site.

The reports and their plots stay where the benchmark scripts write them. This hook adds every
``benchmarks/results/*.md`` (as a page) and ``*.png`` (as an image) to the site under the same
path, ``benchmarks/results/NAME``, so that ``docs/benchmarks.md`` links to them exactly as the
README does, and there is one copy of every result. ``benchmarks/README.md`` (how to run the
scripts) becomes the page ``benchmarks/running.md``.
"""

from __future__ import annotations

from pathlib import Path

from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS = ROOT / "benchmarks"
RESULTS = BENCHMARKS / "results"
SUFFIXES = (".md", ".png")


def on_files(files, config):
    """Add the benchmarks' how-to, reports and plots to the site's files."""
    sources = {"benchmarks/running.md": BENCHMARKS / "README.md"}
    for path in sorted(RESULTS.iterdir()):
        if path.is_file() and path.suffix in SUFFIXES:
            sources[path.relative_to(ROOT).as_posix()] = path
    for src_uri, path in sources.items():
        if path.is_file():
            files.append(File.generated(config, src_uri, abs_src_path=str(path)))
    return files
