"""Symbols shared by the derivations, with their assumptions.

Generated functions take arguments with these names.
"""

from __future__ import annotations

import sympy as sp

x = sp.Symbol("x", real=True)  # evaluation point
q = sp.Symbol("q", positive=True)  # probability level, 0 < q < 1
loc = sp.Symbol("loc", real=True)
scale = sp.Symbol("scale", positive=True)
alpha = sp.Symbol("alpha", positive=True)  # alpha > 1 for sparse families
k = sp.Symbol("k", positive=True)  # k = 1 / (alpha - 1)
n = sp.Symbol("n", positive=True, integer=True)  # dimension N
logdet = sp.Symbol("logdet", real=True)  # log det Sigma
d2 = sp.Symbol("d2", nonnegative=True)  # squared Mahalanobis distance
u = sp.Symbol("u", positive=True)
beta = sp.Symbol("beta", real=True)
p = sp.Symbol("p", nonnegative=True)
