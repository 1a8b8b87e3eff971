"""The examples in the library's documentation run and print what they say (docs/library.md's
calls: capbench_eval.library, capbench_eval.signatures, capbench_eval.coco)."""

import doctest
import importlib

import pytest


@pytest.mark.parametrize(
    "module",
    [
        "capbench_eval.library",
        "capbench_eval.signatures",
        pytest.param("capbench_eval.coco", marks=pytest.mark.slow),  # starts METEOR's JVM: 11 s
    ],
)
def test_the_documented_examples_run(module):
    found = doctest.testmod(importlib.import_module(module), optionflags=doctest.NORMALIZE_WHITESPACE)
    assert found.attempted > 0, f"{module} has no example"
    assert found.failed == 0
