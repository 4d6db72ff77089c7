"""Evalboard's benchmarks: ``python -m benchmarks`` runs every ``bench_*.py`` here.

Each benchmark is a script with a ``main()`` that writes its figures to
``benchmarks/results/<name>.json``; the runner adds ``summary.json``, ``summary.md`` (the
ratios the README quotes) and a plot, ``summary.png``.
"""
