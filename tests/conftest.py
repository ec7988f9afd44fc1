"""Fixtures shared by the test modules: where the real data sets are (``../shared/data`` beside
the checkout, or ``$L1SCALE_DATA``; tests that need them skip without them). Plain helpers that
test modules import by name are in ``_shared_data.py`` (pytest discourages importing conftest)."""

from pathlib import Path

import pytest
from _shared_data import DATA


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The shared data folder; skips the test when it is not there."""
    path = Path(DATA).resolve()
    if not path.is_dir():
        pytest.skip(f"shared data folder not found at {path} (set L1SCALE_DATA)")
    return path
