"""Brute-force searches the tests check the package's answers against (issue 18: they stay as test oracles)."""
