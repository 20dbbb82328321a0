#!/usr/bin/env python3
"""Compares two result vectors (one value per line, as `warpfit run --output`
writes them): same length, infinities equal, max relative difference under
the given bound.  Usage: compare-vectors.py GOT WANT BOUND"""
import sys, math
a = [float(l) for l in open(sys.argv[1])]
b = [float(l) for l in open(sys.argv[2])]
assert len(a) == len(b), (len(a), len(b))
worst = 0.0
for x, y in zip(a, b):
    if math.isinf(x) or math.isinf(y):
        assert x == y, (x, y)
        continue
    worst = max(worst, abs(x - y) / max(abs(y), 1e-6))
print(f"{sys.argv[1]} vs {sys.argv[2]}: {len(a)} values, max rel diff {worst:.2e}")
sys.exit(0 if worst < float(sys.argv[3]) else 1)
