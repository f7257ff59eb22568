"""Benchmarks: our queue against the raw-SQL ceiling and the nearest peers, in one run.

Run from the repository root: ``python -m tests.bench [--quick] [--backend sqlite|postgresql|all]``.
``tests`` stays a namespace package (no ``tests/__init__.py``), so pytest keeps importing the test
modules' siblings (``import procs``) as before; pytest never collects this folder (``norecursedirs``).
"""
