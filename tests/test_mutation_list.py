"""The deliberate bugs of ``tests/mutation_check.py`` still apply: each names text that occurs
exactly once in the source (run the script itself after changing a formula or its tests)."""

import pytest
from conftest import REPO
from mutation_check import MUTANTS


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_mutant_applies(name):
    path, old, new = MUTANTS[name]
    assert (REPO / path).read_text().count(old) == 1 and old != new
