"""Fixit-style: every pass's own VALID / INVALID examples run as tests.

VALID code must produce no finding of the pass's rule codes; each INVALID
example line marked ``# expect: NPUxxx`` must produce exactly those codes of
the pass on that line, and unmarked lines none.
"""

import pytest

from analyse.passes import discover_passes
from tests.helpers import analyse_source, codes_by_line, expected_codes

PASSES = discover_passes()
CASES = []
for p in PASSES:
    for i, src in enumerate(p.VALID):
        CASES.append(pytest.param(p, src, False, id=f"{p.name}-valid-{i}"))
    for i, src in enumerate(p.INVALID):
        CASES.append(pytest.param(p, src, True, id=f"{p.name}-invalid-{i}"))


def test_every_pass_has_examples_and_documented_rules():
    assert PASSES, "no passes discovered"
    for p in PASSES:
        assert p.__class__.__module__ and (p.__class__.__module__ and __import__(p.__class__.__module__, fromlist=["x"]).__doc__), p.name
        assert p.rules, p.name
        assert p.INVALID, f"{p.name} has no INVALID examples"
        for r in p.rules:
            assert r.summary and r.why and r.example and r.fix, r.code


def test_rule_codes_unique():
    from analyse.passes import all_rules

    codes = [r.code for r in all_rules()]
    assert len(codes) == len(set(codes))


@pytest.mark.parametrize("pass_, source, invalid", CASES)
def test_examples(tmp_path, kb, pass_, source, invalid):
    result = analyse_source(tmp_path, source, kb, passes=[pass_])
    assert not result.errors, result.errors
    own = {r.code for r in pass_.rules}
    got = codes_by_line(result.findings, codes=own)
    if invalid:
        assert got == expected_codes(source)
    else:
        assert got == {}
