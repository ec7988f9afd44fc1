"""The tree is ruff clean, lint and format, under the project's configuration (pyproject.toml),
as the pre-commit hooks check it commit by commit."""

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

pytest.importorskip("ruff")


@pytest.mark.parametrize("command", [["check", "--output-format", "concise"], ["format", "--check"]])
def test_the_tree_is_ruff_clean(command):
    result = subprocess.run(
        [sys.executable, "-m", "ruff", *command, "."],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
