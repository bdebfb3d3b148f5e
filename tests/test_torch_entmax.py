"""torch_bridge sparsemax / entmax / Fenchel-Young losses: exactness, gradients, edges."""

from __future__ import annotations

import contextlib
import math
import warnings
from types import ModuleType
from unittest import mock

import mpmath as mp
import numpy as np
import pytest
import torch
from hypothesis import example, given, settings
from hypothesis import strategies as st

from torch_bridge import (
    Entmax,
    EntmaxLoss,
    Sparsemax,
    SparsemaxLoss,
    entmax,
    entmax_loss,
    sparsemax,
    sparsemax_loss,
)
from tsallis import discrete as np_discrete

F64 = torch.float64


def _exact(row: np.ndarray, alpha: float, dps: int = 40) -> np.ndarray:
    """alpha-entmax of one row with mpmath: 300 bisections on the shift c."""
    with mp.workdps(dps):
        a = mp.mpf(alpha)
        zs = [mp.mpf(float(v)) for v in row]
        top = max(zs)
        zs = [v - top for v in zs]

        def mass(c):
            out = []
            for v in zs:
                x = (a - 1) * (v - c)
                if a == 1:
                    out.append(mp.exp(v - c))
                else:
                    out.append(mp.e ** (mp.log1p(x) / (a - 1)) if x > -1 else mp.mpf(0))
            return out

        lo, hi = mp.mpf(0), mp.mpf(60)
        for _ in range(300):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if sum(mass(mid)) > 1 else (lo, mid)
        return np.array([float(v) for v in mass(lo)])


@pytest.mark.parametrize("alpha", [0.5, 1.0, 1.0001, 1.3, 1.5, 1.7, 2.0])
def test_float64_matches_mpmath(alpha):
    """float64 within 1e-12 of 40-digit mpmath (measured <= 3e-16 for alpha <= 2)."""
    x = torch.randn(4, 12, generator=torch.Generator().manual_seed(1), dtype=F64) * 3
    p = entmax(x, alpha).numpy()
    for row, got in zip(x.numpy(), p, strict=True):
        assert np.abs(got - _exact(row, alpha)).max() <= 1e-12


@pytest.mark.parametrize("alpha", [2.5, 3.0, 5.0, 10.0])
def test_float64_above_two_matches_mpmath(alpha):
    """Above alpha = 2, dp/dz = s = p^(2-alpha) is unbounded at the support edge; the
    threshold is refined as a double-double (core.discrete._refined_above_two). On
    N(0, 9) and N(0, 100) rows: within 1e-12 (measured <= 3.9e-16; the base formed as
    1 + (alpha-1) f had been 4e-12 off at alpha = 5 on the N(0, 100) rows)."""
    x = torch.randn(4, 12, generator=torch.Generator().manual_seed(2), dtype=F64) * 3
    x = torch.cat(
        [x, torch.randn(4, 12, generator=torch.Generator().manual_seed(7), dtype=F64) * 10]
    )
    p = entmax(x, alpha).numpy()
    for row, got in zip(x.numpy(), p, strict=True):
        assert np.abs(got - _exact(row, alpha)).max() <= 1e-12


# Rows with entries a hair inside the support: [-0.277, -0.230, -0.138] at alpha = 10
# has an entry 2 ulps of the threshold inside it with p = 0.020 (the loop alone left it
# out); [-0.162, -0.054] at alpha = 10 has p = 0.0034 with s = 5e19.
_EDGE_ROWS = [
    [-0.27720552936923276, -0.23037603279804264, -0.13803081012174426],
    [-0.16197148400515962, -0.0542548433921024],
    [-50.17777792109459, -50.11084018234232, -50.2880828703391, -50.19804546218331],
]


@pytest.mark.parametrize("alpha", [2.5, 5.0, 10.0])
def test_float64_above_two_at_the_support_edge(alpha):
    """Entries near the edge, offset by 0, +-1e-3, -50 and 1e3, against 50-digit mpmath.
    The double-double threshold tau_hi + d resolves d to 4 ulps of |d| <= 8 eps (|max|
    + |c| + 1/(alpha - 1)), so entry i may be off by s_i 32 eps^2 (|max| + 2) beyond a
    few eps: that is the bar (measured: at most 1.2e-16 at alpha <= 5; the second edge
    row at alpha = 10, 8.8e-12, is the only entry above 1e-12, where s = 5e19 allows
    1.6e-11). The loop's base alone was 2.7e-12 off at alpha = 5 and 2e-2 at 10."""
    rng = np.random.default_rng(0)
    rows = [np.array(r) for r in _EDGE_ROWS]
    for _ in range(40):
        r = -rng.uniform(0, 1.3, rng.integers(2, 9)) / (alpha - 1) * rng.choice([0.5, 1, 2])
        rows.append(r + rng.choice([0, 1e3, -50, 1e-3, -1e-3]))
    eps = np.finfo(np.float64).eps
    for row in rows:
        got = entmax(torch.tensor(row)[None], alpha)[0].numpy()
        exact = _exact(row, alpha, dps=50)
        s = np.where(exact > 0, np.maximum(exact, 1e-300) ** (2 - alpha), 0.0)
        bar = 8 * eps + 32 * eps**2 * s.max() * (np.abs(row).max() + 2)
        assert np.all(np.abs(got - exact) <= bar), (row, got - exact)


def test_edge_entries_far_above_two_are_exact(monkeypatch):
    """Above 2 an edge entry's p can sit on a base far below a double-double threshold's
    resolution (about (alpha - 1) eps^2 |tau|): at alpha = 100 two entries 0.0046 apart
    have p = 0.9921 and 0.0079, the second on a base of 1e-208, and the refined
    threshold alone gave 0.34 (0.29 by a 40-digit mpmath bisection). Such rows are
    finished anchored on that entry (_anchored_above_two). Checked: the two-entry row
    against (alpha - 1) gap = p1^(alpha - 1) - p2^(alpha - 1) (p2^99 is 1e-208: p1 =
    (99 gap)^(1/99) to 1e-200), N(0, 1) rows at 10, 30 and 100 against mpmath with the
    digits their smallest p needs (tests/discrete_oracle.py), float32 input, a per-row
    alpha mixing sides of 2, dim 0 and the NumPy face; within 1e-15 (float32: 3e-7).
    Without the anchor the two-entry row is 0.28 off (seen to fail)."""
    import discrete_oracle

    from tsallis import discrete as np_face
    from tsallis.core import discrete as core

    def oracle(row: torch.Tensor, alpha: float) -> torch.Tensor:
        return torch.tensor(
            [float(v) for v in discrete_oracle.entmax(row.tolist(), alpha)], dtype=F64
        )

    top, gap = 1.6956413984298706, 0.004605054855346680
    row = torch.tensor([top, top - gap, -0.3, 0.2, 1.0, top - 0.5], dtype=F64)
    expected = (99 * gap) ** (1 / 99)
    calls = []
    real = core._anchored_above_two
    monkeypatch.setattr(core, "_anchored_above_two", lambda *a: calls.append(1) or real(*a))
    p = entmax(row, 100.0)
    assert calls and abs(float(p[0]) - expected) <= 1e-15
    assert abs(float(p[1]) - (1 - expected)) <= 1e-15 and float(p[2:].abs().max()) == 0
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(400, 6, generator=gen, dtype=F64)
    for alpha in (10.0, 30.0, 100.0):
        p = entmax(x, alpha)
        edge = (p > 0).sum(-1) > 1
        rows = edge.nonzero()[:6, 0].tolist()  # (rows of one entry are exact anyway)
        assert len(rows) >= 5
        for i in rows:
            assert float((p[i] - oracle(x[i], alpha)).abs().max()) <= 1e-15, (alpha, i)
        single = entmax(x.float(), alpha).double()
        assert float((single - entmax(x.float().double(), alpha)).abs().max()) <= 3e-7
        assert torch.equal(entmax(x.T, alpha, dim=0).T, p)
        assert np.abs(np_face.entmax(x.numpy(), alpha) - p.numpy()).max() <= 1e-15
    mixed = torch.tensor([100.0, 1.5, 30.0, 2.0] * 100, dtype=F64)[:, None]
    p = entmax(x, mixed)
    for i in range(8):
        alpha = float(mixed[i])
        assert float((p[i] - entmax(x[i], alpha)).abs().max()) <= 1e-15
    monkeypatch.setattr(core, "_anchored_above_two", real)
    row4212 = torch.randn(6000, 16, generator=torch.Generator().manual_seed(5), dtype=F64)[4212]
    assert float((entmax(row4212, 10.0) - oracle(row4212, 10.0)).abs().max()) <= 1e-15


def test_gradients_far_above_two_are_finite_and_exact():
    """dL/dz and dL/dalpha far above 2: the alpha partial's expm1((alpha - 1) log p)
    rounded to -1 for bases below eps and gave NaN alpha-gradients (344 of 20000 N(0, 1)
    rows of 6 at alpha = 10, 453 at 30, before the fix), and at alpha = 100 an edge p of
    5e-4 has s = p^(2 - alpha) = 1e320, beyond float64, where dL/dz is finite. Checked:
    no NaN or inf in either gradient on those batches; on rows with small edge p, dL/dz
    within 1e-7 (relative) of central differences of the map, dL/dalpha within 1e-6 of
    central differences of the digits-adaptive mpmath map (h = 1e-5)."""
    import discrete_oracle

    gen = torch.Generator().manual_seed(0)
    x = torch.randn(20000, 6, generator=gen, dtype=F64)
    w = torch.randn(20000, 6, generator=gen, dtype=F64)
    for value in (10.0, 30.0, 100.0):
        z = x.clone().requires_grad_()
        alpha = torch.full((20000, 1), value, dtype=F64, requires_grad=True)
        (entmax(z, alpha) * w).sum().backward()
        assert bool(torch.isfinite(z.grad).all()) and bool(torch.isfinite(alpha.grad).all())
    cases = [(98, 100.0), (27, 10.0), (3, 30.0)]  # (p at the edge: 5.3e-4, 0.011, 1.4e-3)
    for i, value in cases:
        row, weights = x[i], w[i]
        p = entmax(row, value)
        assert 0 < float(p[p > 0].min()) < 0.02
        z = row.clone().requires_grad_()
        alpha = torch.tensor([value], dtype=F64, requires_grad=True)
        (entmax(z, alpha) * weights).sum().backward()
        h = 1e-7
        for j in range(6):
            step = torch.zeros(6, dtype=F64)
            step[j] = h
            moved = (entmax(row + step, value) - entmax(row - step, value)) @ weights
            central = float(moved) / (2 * h)
            assert abs(float(z.grad[j]) - central) <= 1e-7 * max(1.0, abs(central)), (i, j)

        def mass(a: float, row: torch.Tensor = row, weights: torch.Tensor = weights) -> float:
            p = [float(v) for v in discrete_oracle.entmax(row.tolist(), a)]
            return float(np.dot(p, weights.numpy()))

        central = (mass(value + 1e-5) - mass(value - 1e-5)) / 2e-5
        assert abs(float(alpha.grad) - central) <= 1e-6 * max(1.0, abs(central)), (i, central)


def test_per_row_alpha_above_two_is_refined_row_by_row():
    """One alpha per row with rows on both sides of 2: each row as exact as alone."""
    row = [0.0, -0.2, -0.2499, -0.1, 5.0, 4.9]
    x = torch.tensor([row, row, row], dtype=F64)
    alpha = torch.tensor([[1.3], [2.0], [5.0]], dtype=F64)
    got = entmax(x, alpha).numpy()
    for a, p in zip((1.3, 2.0, 5.0), got, strict=True):
        assert np.abs(p - _exact(np.array(row), a, dps=50)).max() <= 1e-15


@pytest.mark.parametrize("alpha", [10.0, 30.0, 100.0])
def test_constant_rows_far_above_two_are_uniform(alpha):
    """Constant rows at a large alpha: every base is (1/K)^(alpha - 1) at the shift (1.9e-53
    for K = 64 at 30), finer than the double-double threshold resolves next to 7.0; the
    refinement closed on a shift above every base and the map gave zeros (30 and 100,
    rows of 7.0, -7.0 or 0.5). Now p = 1/K within 1e-15 (float64 and NumPy; float32's own
    rounding of 1/K, half an ulp, in float32), for values from -7 to 1e30, K = 64 and 1000."""
    for size in (64, 1000):
        for value in (0.0, 0.5, 7.0, -7.0, 1e5, 1e30):
            for dtype, bar in ((F64, 1e-15), (torch.float32, 2.0**-24 / size)):
                x = torch.full((3, size), value, dtype=dtype)
                assert (entmax(x, alpha).double() - 1 / size).abs().max() <= bar
            p = np_discrete.entmax(np.full((2, size), value), alpha)
            assert np.abs(p - 1 / size).max() <= 1e-15


@pytest.mark.parametrize("alpha", [2.5, 5.0, 30.0])
def test_huge_rows_in_long_batches_above_two(alpha):
    """Rows of huge scores among N(0, 1) rows in a batch long enough for the loop's
    narrowing above 2 (core.discrete._above_two_rows, (100, 1000)): a constant row of
    1e30 (uniform), one spread from -1e30 to 1e30 (all mass on its maximum), a constant
    row of -1e30 and one with every other entry at 3e29 (2/K on those). There 1/(alpha -
    1) is below half an ulp of the maximum, the packing's bound rounded to the maximum
    and kept no entry, and those rows came out as zeros. p within 1e-15 (float64, NumPy)
    or float32's rounding of 1/K of these values; dL/dz finite, but for float32 at 30 on
    the three uniform rows' supports: there dL/dz = s (g - <s, g> / sum(s)) with s =
    p^(2 - alpha) = 1e84 (K = 1000), beyond float32's range, and it is +-inf (no NaN)."""
    size = 1000
    gen = torch.Generator().manual_seed(12)
    x = torch.randn(100, size, generator=gen, dtype=F64)
    x[8], x[10], x[11, ::2] = 1e30, -1e30, 3e29
    x[9] = torch.linspace(-1e30, 1e30, size, dtype=F64)
    expected = {8: 1 / size, 10: 1 / size}
    for dtype, bar in ((F64, 1e-15), (torch.float32, 2.0**-24 / size)):
        v = x.to(dtype).clone().requires_grad_()
        p = entmax(v, alpha)
        (p * torch.randn(x.shape, generator=gen, dtype=dtype)).sum().backward()
        overflows = dtype == torch.float32 and alpha == 30.0
        rows = [r for r in range(100) if not (overflows and r in (8, 10, 11))]
        assert torch.isfinite(v.grad[rows]).all() and not torch.isnan(v.grad).any()
        p = p.detach().double()
        for row, value in expected.items():
            assert (p[row] - value).abs().max() <= bar
        assert p[9, -1] == 1 and (p[11, ::2] - 2 / size).abs().max() <= 2 * bar
        assert (p[11, 1::2] == 0).all()
    q = np_discrete.entmax(x.numpy(), alpha=alpha)
    assert np.abs(q[[8, 10]] - 1 / size).max() <= 1e-15 and q[9, -1] == 1
    assert np.abs(q[11, ::2] - 2 / size).max() <= 2e-15


@pytest.mark.parametrize(
    "alpha, size", [(1.5, 2), (1.5, 3), (1.5, 8), (2.0, 2), (2.0, 3), (2.0, 4), (2.0, 32)]
)
def test_short_rows_take_the_sorted_map_at_any_batch(alpha, size, monkeypatch):
    """Tensors of rows from tuning.SORT_ROW_LENGTHS[alpha][0] to [1] entries take the
    sorted map however many rows (here 2^17 / K + 5, above SORT_ELEMENTS), with -inf
    entries and ties: p and dL/dz against the Newton loop (SORT_ROW_LENGTHS off) within
    1e-14 in float64; float32 p within 1e-6 of float64. Rows of at most
    tuning.TORCH_SORT_LENGTH entries are sorted by Torch, longer ones by NumPy."""
    from tsallis.core import discrete as core
    from tsallis.core import tuning

    gen = torch.Generator().manual_seed(43)
    rows = (1 << 17) // size + 5
    z = torch.randn(rows, size, generator=gen, dtype=F64)
    z[torch.rand(rows, size, generator=gen) < 0.2] = float("-inf")
    z[:, 0] = 0.25
    z[::7, -1] = 0.25  # (ties at the top)
    w = torch.randn(rows, size, generator=gen, dtype=F64)
    sorted_calls = []
    sorted_map = core._sorted_map
    monkeypatch.setattr(
        core, "_sorted_map", lambda *a, **k: sorted_calls.append(1) or sorted_map(*a, **k)
    )
    results = []
    for lengths in (tuning.SORT_ROW_LENGTHS, {}):
        monkeypatch.setattr(tuning, "SORT_ROW_LENGTHS", lengths)
        sorted_calls.clear()
        x = z.clone().requires_grad_(True)
        p = entmax(x, alpha)
        (p * w).sum().backward()
        results.append((p.detach(), x.grad, bool(sorted_calls)))
    (p, grad, took_sort), (p0, grad0, took_sort0) = results
    assert took_sort and not took_sort0
    assert (p - p0).abs().max() <= 1e-14
    assert (grad - grad0).abs().max() <= 1e-14
    assert (entmax(z.float(), alpha).double() - p).abs().max() <= 1e-6


@pytest.mark.parametrize("alpha", [1.0, 1.5, 2.0])
def test_closed_form_alphas_match_the_sort_based_numpy_maps(alpha):
    x = torch.randn(64, 300, generator=torch.Generator().manual_seed(3), dtype=F64) * 2
    ref = np_discrete.entmax(x.numpy(), alpha)
    assert np.abs(entmax(x, alpha).numpy() - ref).max() <= 1e-14


@pytest.mark.parametrize("library", ["torch", "numpy"])
def test_sort_based_maps_in_float32_within_two_ulps_of_one(library):
    """The sort-based sparsemax and 1.5-entmax (small calls) in float32 within 2e-7 of
    float64 on the same numbers, on rows with near-ties at the top, scales 1e-2 to 1e2
    (measured 7.7e-8 and 4.0e-8; with 1.5's variances summed in float32 3.9e-7)."""
    from tsallis.core import discrete as core

    gen = torch.Generator().manual_seed(1)
    for scale in (1e-2, 1.0, 1e2):
        z = torch.randn(512, 64, generator=gen) * scale
        z[:100, :10] = z[:100, :1] + torch.rand(100, 10, generator=gen) * 1e-3 * scale
        data = z if library == "torch" else z.numpy()
        for fn in (core.entmax15_sorted, core.sparsemax_sorted):
            got = torch.as_tensor(fn(data)).double()
            assert (got - fn(z.double())).abs().max() <= 2e-7, (fn.__name__, scale)


def _support_rows(k: int = 300) -> torch.Tensor:
    """(16, k) float64 rows: m equal top entries far above the rest (supports of exactly
    m = 1, 2, 63, 64, 65, 100 and k at alpha = 2 and 3/2), and N(0, 1) rows at scales
    1e-3 to 10 (supports from all k entries to a few)."""
    rows = []
    for m in (1, 2, 63, 64, 65, 100, k):
        row = torch.full((k,), -50.0, dtype=F64)
        row[:m] = 0.0
        rows.append(row[torch.randperm(k, generator=torch.Generator().manual_seed(m))])
    gen = torch.Generator().manual_seed(5)
    scales = torch.logspace(-3, 1, 9, dtype=F64)[:, None]
    return torch.cat([torch.stack(rows), torch.randn(9, k, generator=gen, dtype=F64) * scales])


@pytest.mark.parametrize("alpha", [1.5, 2.0])
@pytest.mark.parametrize("library", ["torch", "numpy"])
def test_sorted_prefix_threshold_is_the_every_size_one(alpha, library):
    """The sort-based threshold from the first SORTED_PREFIX sizes (every size where a
    support fills them) is the every-size threshold bit for bit, and the map it gives
    (a small call: the sort-based path) is within 1e-15 of mpmath, on rows whose supports
    hold 1 to 300 entries, among them exactly 63, 64 and 65."""
    from tsallis.core import discrete as core
    from tsallis.core import tuning

    z = _support_rows()
    u = z - z.amax(-1, keepdim=True)
    u = (u / 2 if alpha == 1.5 else u).clamp_min(-2.0)
    ordered = core._decreasing(u if library == "torch" else u.numpy())
    full = core._sorted_threshold(ordered, alpha)
    assert tuning.SORTED_PREFIX < z.shape[-1]
    prefix = core._sorted_threshold(ordered, alpha, tuning.SORTED_PREFIX)
    assert np.array_equal(np.asarray(prefix), np.asarray(full))
    p = entmax(z, alpha) if library == "torch" else np_discrete.entmax(z.numpy(), alpha)
    for i in (3, 4, 9):  # supports of 64, 65 and hundreds (scale 1e-3)
        assert np.abs(np.asarray(p)[i] - _exact(z.numpy()[i], alpha)).max() <= 1e-15


def _hard_rows(dtype: torch.dtype) -> torch.Tensor:
    """(400, 200) scores (80,000 values: the Newton path, rows finished apart): N(0, 1)
    rows at scales 1e-4 to 1e3 (supports of hundreds at the small scales, wider than
    the loop's start from the largest entries), ties, -inf entries, 20 near-equal top
    entries, constant rows."""
    gen = torch.Generator().manual_seed(17)
    z = torch.randn(400, 200, generator=gen, dtype=F64)
    z[:100] *= torch.logspace(-4, 3, 100, dtype=F64)[:, None]
    z[100:150] = torch.randint(0, 3, (50, 200), generator=gen).to(F64)
    z[150:200, ::3] = float("-inf")
    z[200:250, :20] += 50
    z[250:260] = 0.0
    return z.to(dtype)


@pytest.mark.parametrize("library", ["torch", "numpy"])
def test_large_sparsemax_matches_the_sort_based_threshold(library):
    """Sparsemax on a large call runs Newton's method from the threshold of the 32
    largest entries (tuning.PREFIX_WIDTH: a lower bound, exact when the support is no
    larger) and finishes its last rows apart; both must leave it exact: within 1e-14 of
    the sort-based float64 map on the same numbers, float32 within 1e-6 (measured 2.4e-7;
    7.9e-7 from the 8 largest, on rows at scale 1e-3 to 1e-2 whose supports hold
    hundreds of entries), the support indicator s equal to p > 0."""
    from tsallis.core import discrete as core

    for dtype, tol in ((F64, 1e-14), (torch.float32, 1e-6)):
        z = _hard_rows(dtype)
        want = core.sparsemax_sorted(z.double())
        data = z if library == "torch" else z.numpy()
        p, s = core.entmax_newton(data, 2.0, slopes=True)
        p, s = torch.as_tensor(p).double(), torch.as_tensor(s)
        assert (p - want).abs().max() <= tol, dtype
        assert torch.equal(s > 0, p > 0)


@pytest.mark.parametrize("library", ["torch", "numpy"])
def test_prefix_start_changes_nothing(monkeypatch, library):
    """The eager loop starts from the shift of each row's largest entries alone
    (tuning.PREFIX_WIDTH: a lower bound, exact where they hold the support). p and s
    agree with the loop from the row maximum (PREFIX_ALPHA raised past 2) within 1e-14
    and 1e-13 in float64, on N(0, 1) rows of 1000 (every support held) and on the hard
    rows, some of whose supports are wider than the prefix (checked), at alpha = 1.25,
    1.3, 1.5 (closed form), 1.7 and 2 (closed form); the start did run (on every row
    length and alpha here: the tuning's limits lowered)."""
    from tsallis.core import discrete as core
    from tsallis.core import tuning

    monkeypatch.setattr(tuning, "PREFIX_MIN_LENGTH", {})
    monkeypatch.setattr(tuning, "PREFIX_MIN_LENGTH_OTHERS", 0)
    monkeypatch.setattr(tuning, "PREFIX_ALPHA", 1.25)
    gen = torch.Generator().manual_seed(5)
    started = []
    for name in ("_prefix_start", "_prefix_map"):  # (alpha = 2 and 3/2, other alphas)
        original = getattr(core, name)
        monkeypatch.setattr(core, name, lambda *a, f=original: started.append(1) or f(*a))
    for z in (torch.randn(100, 1000, generator=gen, dtype=F64), _hard_rows(F64)):
        data = z if library == "torch" else z.numpy()
        for alpha in (1.25, 1.3, 1.5, 1.7, 2.0):
            started.clear()
            p, s = core.entmax_newton(data, alpha, slopes=True)
            assert started, alpha
            monkeypatch.setattr(tuning, "PREFIX_ALPHA", 3.0)
            p0, s0 = core.entmax_newton(data, alpha, slopes=True)
            monkeypatch.setattr(tuning, "PREFIX_ALPHA", 1.25)
            p, s, p0, s0 = (torch.as_tensor(v) for v in (p, s, p0, s0))
            assert (p - p0).abs().max() <= 1e-14, alpha
            assert (s - s0).abs().max() <= 1e-13, alpha
            if z.shape[-1] == 200:  # the hard rows: some support wider than the prefix
                assert int((p > 0).sum(-1).max()) > core._prefix_width(data, alpha, True)


def test_the_prefix_start_follows_the_partition_measurement(monkeypatch):
    """The prefix start runs where arrays.partition_pays says so: tuning.PARTITION_PAYS
    where set, else the measurement against tuning.PARTITION_RATIO (made once: the
    cached result is cleared here). partition_cost is a positive, finite ratio; with the
    ratio limit at 0 the start is off, at infinity on, and forced either way it follows
    PARTITION_PAYS; with the start off, p is still within 1e-6 of float64 (float32
    N(0, 1) rows (128, 1000) at alpha = 1.3 and 2)."""
    from tsallis.core import arrays, tuning
    from tsallis.core import discrete as core

    cost = arrays.partition_cost()
    assert math.isfinite(cost) and cost > 0
    z = torch.randn(128, 1000, generator=torch.Generator().manual_seed(8))  # >= COMPACT_ELEMENTS
    width = 1000 // tuning.PREFIX_SHARE
    monkeypatch.setattr(tuning, "PARTITION_PAYS", None)
    for limit, expected in ((0.0, None), (math.inf, width)):
        monkeypatch.setattr(tuning, "PARTITION_RATIO", limit)
        arrays._measured_partition_pays.cache_clear()
        assert core._prefix_width(z, 1.3, True) == expected, limit
        assert core._prefix_width(z, 1.3, True) == expected, limit  # cached
    arrays._measured_partition_pays.cache_clear()
    for forced, expected in ((False, None), (True, width)):
        monkeypatch.setattr(tuning, "PARTITION_PAYS", forced)
        assert core._prefix_width(z, 1.3, True) == expected
    monkeypatch.setattr(tuning, "PARTITION_PAYS", False)
    for alpha in (1.3, 2.0):
        p = entmax(z, alpha=alpha)
        exact = torch.as_tensor(core.entmax_newton(z.double().numpy(), alpha))
        assert (p.double() - exact).abs().max() <= 1e-6, alpha


def _numpy_spy(name: str) -> tuple[list, mock._patch]:
    """A patch of NumPy's ufunc ``name`` that records each call in the list returned
    with it (the views' tests below)."""
    seen = []
    original = getattr(np, name)

    def counted(*args, **kwargs):
        seen.append(1)
        return original(*args, **kwargs)

    return seen, mock.patch.object(np, name, counted)


def test_log2_on_numpy_views(monkeypatch):
    """arrays.log2_into: NumPy's log2 on views of CPU tensors where tuning.NUMPY_LOG2 (or
    the measurement, numpy_log2_pays) says so, Torch's otherwise and for non-contiguous
    or gradient-carrying tensors; the same values within 2 ulps (float32) and 1 ulp
    (float64), relative to max(|log2 x|, 1), of NumPy's float64 log2, down to the smallest normal
    number (the loop's floor); and the loop's maps with either log2 agree within 1e-6
    (float32) and 1e-13 (float64) at alpha = 1.35 and 1.7 (rows of 1000; 1.3 takes the
    cube root, core.discrete._rooted_mass)."""
    from tsallis.core import arrays, tuning
    from tsallis.core import discrete as core

    assert isinstance(arrays.numpy_log2_pays(torch), bool)
    assert core._rational_power(1.35) is None and core._rational_power(1.7) is None
    seen, spy = _numpy_spy("log2")
    gen = torch.Generator().manual_seed(4)
    for dtype, ulps in ((torch.float32, 2), (F64, 1)):
        x = torch.rand(64, 100, generator=gen, dtype=dtype) * 10
        x[0, :3] = torch.tensor([torch.finfo(dtype).tiny, 1.0, 2.0**-60], dtype=dtype)
        exact = np.log2(x.double().numpy())
        eps = float(torch.finfo(dtype).eps)
        for forced in (True, False):
            monkeypatch.setattr(tuning, "NUMPY_LOG2", forced)
            for source in (x, x.t().contiguous().t()):  # contiguous, then a transposed view
                seen.clear()
                out = torch.empty_like(source)
                with spy:
                    got = arrays.log2_into(source, out)
                assert got is out
                assert bool(seen) == (forced and source.is_contiguous())
                error = np.abs(got.double().numpy() - exact)
                assert (error <= ulps * eps * np.maximum(np.abs(exact), 1.0)).all()
            grad = x.clone().requires_grad_(True)
            seen.clear()
            with spy, torch.no_grad():
                arrays.log2_into(grad, torch.empty_like(x))
            assert not seen
    z = torch.randn(128, 1000, generator=gen)
    for alpha in (1.35, 1.7):
        maps = []
        for forced in (True, False):
            monkeypatch.setattr(tuning, "NUMPY_LOG2", forced)
            maps.append((core.entmax_newton(z, alpha), core.entmax_newton(z.double(), alpha)))
        assert (maps[0][0] - maps[1][0]).abs().max() <= 1e-6
        assert (maps[0][1] - maps[1][1]).abs().max() <= 1e-13


def test_cube_root_on_numpy_views():
    """arrays.cbrt_into (the state's cube root at alpha = 1.3 and the other thirds,
    core.discrete._rooted_mass): NumPy's cbrt on views of contiguous CPU tensors, Torch's
    pow(x, 1/3) for transposed or gradient-carrying ones, NumPy's for arrays; within 2
    ulps of the float64 cube root (float32, whose pow is float64's rounded; 1 ulp for
    float64, whose pow is within that plus its exponent's shortfall, |ln x| 2e-17
    relatively), down to the smallest normal number (the loop's floor); 0 stays 0, in
    place too."""
    from tsallis.core import arrays

    seen, spy = _numpy_spy("cbrt")
    gen = torch.Generator().manual_seed(5)
    for dtype, ulps in ((torch.float32, 2), (F64, 1)):
        x = torch.rand(64, 100, generator=gen, dtype=dtype) * 10
        x[0, :4] = torch.tensor([torch.finfo(dtype).tiny, 1.0, 2.0**-60, 0.0], dtype=dtype)
        exact = np.cbrt(x.double().numpy())
        eps = float(torch.finfo(dtype).eps)
        shortfall = 2e-17 * np.abs(np.log(np.where(exact > 0, x.double().numpy(), 1.0)))
        for source, numpy in ((x, True), (x.t().contiguous().t(), False)):
            seen.clear()
            out = torch.empty_like(source)
            with spy:
                got = arrays.cbrt_into(source, out)
            assert got is out and bool(seen) == numpy
            error = np.abs(got.double().numpy() - exact)
            bound = (ulps * eps + (0.0 if numpy or dtype != F64 else shortfall)) * exact
            assert (error <= bound).all()
            assert got[0, 3] == 0
        in_place = x.clone()
        fresh = arrays.cbrt_into(x, torch.empty_like(x))
        assert (arrays.cbrt_into(in_place, in_place) == fresh).all()
        seen.clear()
        with spy, torch.no_grad():
            arrays.cbrt_into(x.clone().requires_grad_(True), torch.empty_like(x))
        assert not seen
        array = x.numpy()
        assert (arrays.cbrt_into(array, np.empty_like(array)) == np.cbrt(array)).all()


def test_softmax_backward_fused_and_unfused_agree():
    """arrays.softmax_backward: Torch's fused kernel (contiguous inputs), the unfused form
    it takes for an expanded or transposed gradient, and NumPy agree within 1e-15 in
    float64 with out (g - <out, g>) written out, on rows of 300 with zeros in out."""
    from tsallis.core import arrays

    gen = torch.Generator().manual_seed(6)
    out = torch.rand(40, 300, generator=gen, dtype=F64) * (torch.rand(40, 300, generator=gen) < 0.3)
    out = out / out.sum(-1, keepdim=True)
    for grad in (
        torch.randn(40, 300, generator=gen, dtype=F64),  # fused
        torch.randn(300, 40, generator=gen, dtype=F64).t(),  # transposed: unfused
        torch.full((1, 1), 0.7, dtype=F64).expand(40, 300),  # the gradient of a sum
    ):
        want = out * (grad - (out * grad).sum(-1, keepdim=True))
        assert (arrays.softmax_backward(grad, out) - want).abs().max() <= 1e-15
        numpy = arrays.softmax_backward(grad.numpy(), out.numpy())
        assert np.abs(numpy - want.numpy()).max() <= 1e-15


def _gaps(seed: int, dtype: type) -> np.ndarray:
    """max - z as the partitions see it, (64, 300): |N(0, 1)| with +inf (the gap of a -inf
    entry) in every seventh column, ties, 0, and -0 (max - max where max is -0)."""
    gap = np.abs(np.random.default_rng(seed).standard_normal((64, 300))).astype(dtype)
    gap[:, ::7] = np.inf
    gap[:, 5:9] = gap[:, 3:4]  # ties
    gap[:, 11] = 0.0
    gap[:32, 12] = -0.0
    return gap


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("scratch", [False, True])
def test_smallest_gaps_by_their_bits_are_the_sorted_ones(dtype, scratch):
    """arrays.smallest partitions the bits of non-negative floats as integers: the k
    smallest equal the first k of a sort exactly (_gaps: +inf, ties, 0 and -0), in
    NumPy and as a CPU tensor; scratch reorders the input in place, and only then."""
    from tsallis.core import arrays

    gap = _gaps(4, dtype)
    for k in (1, 8, 75, 299):
        want = np.sort(gap, axis=-1)[:, :k]
        for data in (gap.copy(), torch.from_numpy(gap.copy())):
            got = arrays.smallest(data, k, scratch=scratch)
            assert np.array_equal(np.asarray(got), want)
            assert np.array_equal(np.asarray(data), gap) != scratch or k == 1


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_smallest_columns_hold_the_smallest_gaps(dtype):
    """arrays.smallest_columns: k distinct columns per row whose values are the k
    smallest up to the truncation of their low bits (exactly so in float64, whose 43
    remaining bits tell these values apart; within a relative 2^-13 of the bound in
    float32), every other value at least the bound and the bound at most the largest
    of the k; with +inf (a -inf entry's gap, +inf as bound where one is taken), ties, 0
    and -0 (_gaps), in NumPy and as a CPU tensor (int64 columns, the input overwritten)."""
    from tsallis.core import arrays

    gap = _gaps(7, dtype)
    gap[60:, :290] = np.inf  # rows with 10 finite entries: +inf among the k
    for k in (1, 8, 75, 299):
        want = np.sort(gap, axis=-1)
        for data in (gap.copy(), torch.from_numpy(gap.copy())):
            columns, bound = arrays.smallest_columns(data, k)
            assert not np.array_equal(np.asarray(data), gap)  # scratch
            if isinstance(data, torch.Tensor):
                assert columns.dtype == torch.int64 and isinstance(bound, torch.Tensor)
            columns, bound = np.asarray(columns), np.asarray(bound)
            assert columns.shape == (64, k) and bound.shape == (64, 1)
            assert all(len(set(row)) == k for row in columns.tolist())
            inside = np.sort(np.take_along_axis(gap, columns, -1), axis=-1)
            outside = np.ones_like(gap, dtype=bool)
            np.put_along_axis(outside, columns, False, -1)
            assert bool((np.where(outside, gap, np.inf) >= bound).all())
            assert bool((bound[:, 0] <= inside[:, -1]).all())
            assert np.isinf(bound[60:]).all() == (k > 10)
            if dtype == np.float64:
                assert np.array_equal(inside, want[:, :k])
            else:
                assert bool((inside <= want[:, k - 1 : k] * (1 + 2.0**-13)).all())


def test_gradient_on_the_columns_of_the_largest_entries():
    """Where each row's largest quarter holds its support (_prefix_map), the forward
    keeps s / sum(s) on those columns (ColumnSlopes) and the backward gathers g there
    and scatters dL/dz: within 1e-13 of s (g - <s, g> / sum s), s = p^(2 - alpha), in
    float64 at alpha = 1.3 and 1.7, along dim 0 and 1, with masked entries, and on 3-D
    input along dims 2 and 0 (whose rows the loop flattens: ColumnSlopes unflattened;
    that raised AttributeError before); with fully masked rows (filled with zeros before
    the map: their support is the row) and rows whose support is wider than the
    quarter, s is scattered (checked)."""
    from tsallis.core import discrete as core

    gen = torch.Generator().manual_seed(8)
    z = torch.randn(128, 1000, generator=gen, dtype=F64)
    partial = torch.ones(128, 1000, dtype=torch.bool)
    partial[:, 100:400] = False
    empty = partial.clone()
    empty[:3] = False  # no valid entry: zeros (their rows of 0 hold the whole row)
    wide = z.clone()
    wide[:5] *= 0.01  # nearly flat rows: supports wider than 250 (checked)
    kinds = []
    original = core.entmax_map

    def recorded(*args, **kwargs):
        out = original(*args, **kwargs)
        kinds.append(out[1])
        return out

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(core, "entmax_map", recorded)
        for alpha in (1.3, 1.7):
            cases = (
                (z, None, 1),
                (z.t(), None, 0),
                (z, partial, 1),
                (z, empty, 1),
                (wide, None, 1),
                (z.reshape(2, 64, 1000), None, 2),
                (z.reshape(2, 64, 1000).movedim(2, 0), None, 0),
            )
            for data, m, dim in cases:
                x = data.clone().requires_grad_()
                g = torch.randn(data.shape, generator=gen, dtype=F64)
                p = entmax(x, alpha, dim=dim, mask=m)
                (p * g).sum().backward()
                p, g, grad = (v.detach().movedim(dim, -1) for v in (p, g, x.grad))
                s = p ** (2 - alpha)
                total = s.sum(-1, keepdim=True).clamp_min(1e-300)
                want = s * (g - (s * g).sum(-1, keepdim=True) / total)
                assert (grad - want).abs().max() <= 1e-13, (alpha, dim)
                if data is wide:
                    assert int((p[:5] > 0).sum(-1).min()) > 250
    per_alpha = [True] * 3 + [False] * 2 + [True] * 2
    assert [isinstance(k, core.ColumnSlopes) for k in kinds] == per_alpha * 2


@pytest.mark.parametrize("alpha", [1.3, 1.5, 1.7, 2.0])
def test_prefix_start_is_within_three_ulps_in_float32(alpha, monkeypatch):
    """Where the prefix holds the support, the float32 start is the shift itself: within
    3 ulps of max(|c|, 1) of the float64 shift on the same numbers (measured at 1.3, where
    the start is the prefix loop's last step below sqrt(eps): 1.84 with Torch's log2 of
    the loop's state, 2.17 with NumPy's (tuning.NUMPY_LOG2), whose float32 log2 is within
    2 ulps of the result where Torch's is within 0.67; p is no further off with either:
    worst 2.9e-7 on N(0, sigma^2) rows at 1.25 to 1.9; and 0.5 at 3/2, whose variances are
    summed in float64: in float32 they left it 8 ulps off). The float64 shift comes from
    the loop's threshold mode, whose mass at c is 1 within 1e-13."""
    from tsallis.core import arrays, tuning
    from tsallis.core import discrete as core

    monkeypatch.setattr(tuning, "PREFIX_MIN_LENGTH", {})  # (3/2 takes it from 2048)
    gen = torch.Generator().manual_seed(3)
    z = torch.randn(256, 1000, generator=gen)
    z[:64] *= 10
    top = z.amax(-1, keepdim=True)
    width = core._prefix_width(z, alpha, True)
    if alpha in tuning.PREFIX_WIDTH:
        start, held = core._prefix_start(top - z, alpha, width, lambda t: t.numpy())
    else:  # the columns of the largest entries, their shift alone
        columns, bound = arrays.smallest_columns(top - z, width)
        subset = arrays.take_columns(z, columns) - top
        start, held, _ = core._subset_shift(subset, bound, alpha, None, lambda t: t.numpy())
    z64 = z.double()
    exact = torch.from_numpy(core.entmax_newton(z64, alpha, threshold=True))
    base = (1 + (alpha - 1) * (z64 - z64.amax(-1, keepdim=True) - exact)).clamp_min(0)
    assert (base ** (1 / (alpha - 1))).sum(-1).sub(1).abs().max() <= 1e-13
    assert bool((base.sort(-1, descending=True).values[:, width - 1] == 0).all())  # held
    ulp = np.spacing(np.maximum(exact.abs().numpy(), 1).astype(np.float32))
    assert bool((np.abs(start.astype(np.float64) - exact.numpy()) <= 3 * ulp).all())
    assert bool(held.all())  # every row known to be at its shift: one evaluation


def test_rows_finished_apart_change_nothing(monkeypatch):
    """The eager loop finishes its last rows by a call of their own (tuning.STRAGGLERS);
    p and s agree with the loop that keeps every row (COMPACT_ELEMENTS raised past the
    call) within 1e-14 for alpha <= 2 on 3-D input, and the rows did go apart."""
    from tsallis.core import discrete as core
    from tsallis.core import tuning

    hard = _hard_rows(F64).reshape(4, 100, 200)
    # most rows converge early: the rest go apart (column 0 is -inf on 50 of the rows,
    # where it cannot dominate: which construction leaves few enough depends on alpha)
    dominated, elsewhere = hard.clone(), hard.clone()
    dominated[:, :97, 0] += 40
    elsewhere[:, :97, 1] += 40
    taken, default = [], tuning.COMPACT_ELEMENTS
    original = core._take_rows
    monkeypatch.setattr(core, "_take_rows", lambda a, i: taken.append(1) or original(a, i))
    for alpha in (0.5, 1.0, 1.3, 1.5, 2.0):
        taken.clear()
        for z in (hard, dominated, elsewhere):
            p, s = core.entmax_newton(z, alpha, slopes=True)
            monkeypatch.setattr(tuning, "COMPACT_ELEMENTS", 1 << 62)
            p0, s0 = core.entmax_newton(z, alpha, slopes=True)
            monkeypatch.setattr(tuning, "COMPACT_ELEMENTS", default)
            assert (p - p0).abs().max() <= 1e-14 and (s - s0).abs().max() <= 1e-13, alpha
        assert taken, alpha  # rows went apart


@pytest.mark.parametrize("alpha", [2.5, 5.0, 10.0])
def test_rows_above_two_finished_apart_change_nothing(alpha, monkeypatch):
    """Above 2 the eager loop also leaves rows apart once at most half are left and the
    done ones are worth tuning.DONE_ELEMENTS values, and its double-double refinement
    leaves its last rows apart too (lowered here, with COMPACT_ELEMENTS, to a few
    rows). Each row takes
    the same steps either way, and a row's sum does not depend on the others: p and s
    are bit for bit those of the loops without DONE_ELEMENTS on the (400, 200) hard
    rows (which the loop takes packed to their largest entries), and those of loops that
    keep every row on tall N(0, 1) rows of 16, where the refinement did leave rows apart;
    three of those within 1e-12 of 40-digit mpmath. Alpha arrays too, bit for bit as
    with every row kept: (1, 1) (broadcast: the rows apart keep it whole), one value per
    row, and alphas per row from 1.5 up (rows at or below 2 settled)."""
    from tsallis.core import discrete as core
    from tsallis.core import tuning

    taken, original = [], core._rows_of  # (the refinement's rows apart)
    monkeypatch.setattr(core, "_rows_of", lambda a, i, n: taken.append(1) or original(a, i, n))
    heavy, apart = [], core._left_apart  # (rows apart by DONE_ELEMENTS, not STRAGGLERS)

    def recorded(left: int, rows: int, size: int, above_two: bool) -> bool:
        decided = apart(left, rows, size, above_two)
        heavy.append(decided and left > tuning.STRAGGLERS * rows)
        return decided

    monkeypatch.setattr(core, "_left_apart", recorded)
    monkeypatch.setattr(tuning, "COMPACT_ELEMENTS", 1 << 10)
    monkeypatch.setattr(tuning, "DONE_ELEMENTS", 1 << 10)
    hard = _hard_rows(F64)
    p, s = core.entmax_newton(hard, alpha, slopes=True)
    with monkeypatch.context() as kept:
        kept.setattr(tuning, "DONE_ELEMENTS", 1 << 62)
        p0, s0 = core.entmax_newton(hard, alpha, slopes=True)
    assert torch.equal(p, p0) and torch.equal(s, s0), alpha
    tall = torch.randn(6000, 16, generator=torch.Generator().manual_seed(5), dtype=F64)
    taken.clear()
    p, s = core.entmax_newton(tall, alpha, slopes=True)
    assert taken and any(heavy), alpha  # rows apart in the refinement, by DONE_ELEMENTS
    with monkeypatch.context() as kept:
        kept.setattr(tuning, "COMPACT_ELEMENTS", 1 << 62)
        p0, s0 = core.entmax_newton(tall, alpha, slopes=True)
    assert torch.equal(p, p0) and torch.equal(s, s0), alpha
    for row, got in zip(tall.numpy()[:3], p[:3].numpy(), strict=True):
        assert np.abs(got - _exact(row, alpha)).max() <= 1e-12, alpha
    rows = tall.shape[0]
    per_row = torch.linspace(1.5, alpha + 1, rows, dtype=F64)[:, None]
    for alphas in (torch.full((1, 1), alpha, dtype=F64), torch.full((rows, 1), alpha), per_row):
        taken.clear()
        q = core.entmax_newton(tall, alphas.to(F64))
        assert taken, alpha
        with monkeypatch.context() as kept:
            kept.setattr(tuning, "COMPACT_ELEMENTS", 1 << 62)
            assert torch.equal(q, core.entmax_newton(tall, alphas.to(F64))), alpha


def _narrowings(monkeypatch) -> list:
    """Records each _narrowed call's result: the narrow rows' width, or None (refused)."""
    from tsallis.core import discrete as core
    from tsallis.core import tuning

    # (the start from each row's largest entries, which the test run forces on, takes
    # alpha from tuning.PREFIX_ALPHA: off, as where the partition does not pay)
    monkeypatch.setattr(tuning, "PARTITION_PAYS", False)
    widths = []
    original = core._narrowed

    def recorded(*args):
        found = original(*args)
        widths.append(None if found is None else found[0].shape[-1])
        return found

    monkeypatch.setattr(core, "_narrowed", recorded)
    return widths


@pytest.mark.parametrize("alpha", [1.1, 1.3, 1.7, 1.9])
def test_narrowed_rows_change_nothing(alpha, monkeypatch):
    """After its first step the eager loop goes on over the entries that can still be in
    the support (core._narrowed): p, s / sum(s) and sum(s) agree with the loop over the
    whole rows (tuning.NARROW_MIN_LENGTH raised past the rows) within 1e-14 / 1e-13 /
    1e-13 relative in float64, on N(0, 10^2) rows of 1000 (kept: 41 at alpha = 1.1, 3 at
    1.9) and on those with -inf entries, tied maxima, near-equal top entries and a 1e3
    spread, as tensors and as NumPy arrays; float32 p within 1e-6 of float64 (the
    issue's bound); the rows were narrowed (to at most tuning.NARROW_SHARE of them)."""
    from tsallis.core import discrete as core
    from tsallis.core import tuning

    widths = _narrowings(monkeypatch)
    gen = torch.Generator().manual_seed(21)
    scores = 10 * torch.randn(128, 1000, generator=gen, dtype=F64)
    hard = scores.clone()  # -inf entries, tied maxima, 20 near-equal top entries, 1e3 spread
    hard[:16, ::3] = float("-inf")
    hard[16:32, :5] = hard[16:32].amax(-1, keepdim=True)
    hard[32:48, :20] = 60 + 1e-9 * torch.arange(20, dtype=F64)
    hard[48:64] *= 100
    for z in (scores, hard):
        for kind in (lambda t: t, lambda t: t.numpy()):
            widths.clear()
            p, s, scale = core.entmax_map(kind(z), alpha)
            assert widths and widths[0] is not None
            assert widths[0] <= tuning.NARROW_SHARE * z.shape[-1]
            monkeypatch.setattr(tuning, "NARROW_MIN_LENGTH", 10**9)
            p0, s0, scale0 = core.entmax_map(kind(z), alpha)
            monkeypatch.setattr(tuning, "NARROW_MIN_LENGTH", 128)
            p, s, scale, p0, s0, scale0 = (
                torch.as_tensor(v) for v in (p, s, scale, p0, s0, scale0)
            )
            assert (p - p0).abs().max() <= 1e-14, alpha
            assert (s - s0).abs().max() <= 1e-13, alpha
            assert ((scale - scale0) / scale0).abs().max() <= 1e-13, alpha
            assert bool((p[p0 == 0] == 0).all())  # exact zeros off the support
        widths.clear()
        p32 = entmax(z.float(), alpha).double()
        assert widths[0] is not None
        assert (p32 - entmax(z.float().double(), alpha)).abs().max() <= 1e-6, alpha


@settings(max_examples=25, deadline=None)
@given(
    alpha=st.floats(1.02, 1.98),
    exponent=st.floats(-0.3, 6.0),
    seed=st.integers(0, 2**31 - 1),
    dropped=st.sampled_from([0.0, 0.3, 0.9]),
)
def test_narrowed_rows_match_whole_rows_fuzzed(alpha, exponent, seed, dropped):
    """Fuzzed: float64 (128, 512) rows at any alpha in (1, 2), spreads from 0.5 to 1e6,
    a share of -inf entries (each row keeps a finite maximum): p from the loop as it runs
    (narrowed where few enough entries are kept) within 1e-14 of the loop over the whole
    rows, summing to 1 within 1e-13."""
    from tsallis.core import discrete as core
    from tsallis.core import tuning

    spread = 10.0**exponent
    gen = torch.Generator().manual_seed(seed)
    z = spread * torch.randn(128, 512, generator=gen, dtype=F64)
    z[torch.rand(128, 512, generator=gen) < dropped] = float("-inf")
    z[:, 0] = spread  # (a finite maximum in every row)
    saved = tuning.PARTITION_PAYS, tuning.NARROW_MIN_LENGTH
    try:
        tuning.PARTITION_PAYS = False
        p = core.entmax_newton(z, alpha)
        tuning.NARROW_MIN_LENGTH = 10**9
        p0 = core.entmax_newton(z, alpha)
    finally:
        tuning.PARTITION_PAYS, tuning.NARROW_MIN_LENGTH = saved
    assert (p - p0).abs().max() <= 1e-14
    assert (p.sum(-1) - 1).abs().max() <= 1e-13


def test_narrowed_rows_gradients(monkeypatch):
    """The backward from the narrowed loop's p and s / sum(s) (a Python-float alpha =
    1.3): the gradient with respect to z agrees with the loop over the whole rows within
    1e-13 (float64)."""
    from tsallis.core import tuning

    widths = _narrowings(monkeypatch)
    z = 10 * torch.randn(128, 1000, generator=torch.Generator().manual_seed(22), dtype=F64)
    w = torch.randn(128, 1000, generator=torch.Generator().manual_seed(23), dtype=F64)
    grads = []
    for length in (128, 10**9):
        monkeypatch.setattr(tuning, "NARROW_MIN_LENGTH", length)
        x = z.clone().requires_grad_(True)
        (entmax(x, 1.3) * w).sum().backward()
        grads.append(x.grad)
    assert widths and widths[0] is not None
    assert (grads[0] - grads[1]).abs().max() <= 1e-13


def test_narrowed_rows_that_fall_are_solved_again(monkeypatch):
    """Rows whose step after the narrowing falls below the shift it was made at (here
    forced: the first Newton step taken three times as long, past the shift) are solved
    again over the whole row: p stays within 1e-14 of the loop over the whole rows (in
    float64), and those rows did go through the whole-row call."""
    from tsallis.core import discrete as core
    from tsallis.core import tuning

    widths = _narrowings(monkeypatch)
    z = 10 * torch.randn(128, 1000, generator=torch.Generator().manual_seed(24), dtype=F64)
    monkeypatch.setattr(tuning, "NARROW_MIN_LENGTH", 10**9)
    p0 = core.entmax_newton(z, 1.3)
    monkeypatch.setattr(tuning, "NARROW_MIN_LENGTH", 128)
    step, calls = core._deformed_step, []

    def overshooting(*args):  # the first step only
        calls.append(1)
        return step(*args) * (3.0 if len(calls) == 1 else 1.0)

    again, newton = [], core.entmax_newton

    def recorded(z, alpha, *args, **kwargs):
        again.append(z.shape)
        return newton(z, alpha, *args, **kwargs)

    monkeypatch.setattr(core, "_deformed_step", overshooting)
    monkeypatch.setattr(core, "entmax_newton", recorded)
    p = core.entmax_newton(z, 1.3)
    assert widths and widths[0] is not None
    assert any(shape[-1] == 1000 and shape[0] < 128 for shape in again[1:])  # rows again
    assert (p - p0).abs().max() <= 1e-14


def _finishes(monkeypatch) -> dict:
    """Records the eager loop's first-order finishes (core._Buffers.finished: the largest
    step each took) and its Halley steps formed after a refused narrowing
    (core._Buffers.bent_total), with the prefix start off."""
    from tsallis.core import discrete as core
    from tsallis.core import tuning

    monkeypatch.setattr(tuning, "PARTITION_PAYS", False)
    seen = {"finished": [], "bent": 0}
    finished, bent_total = core._Buffers.finished, core._Buffers.bent_total

    def recorded_finish(self, delta, alpha):
        seen["finished"].append(float(np.abs(delta).max()))
        return finished(self, delta, alpha)

    def recorded_bent(self):
        seen["bent"] += 1
        return bent_total(self)

    monkeypatch.setattr(core._Buffers, "finished", recorded_finish)
    monkeypatch.setattr(core._Buffers, "bent_total", recorded_bent)
    return seen


def _finish_rows(dtype: torch.dtype) -> tuple[torch.Tensor, ...]:
    """N(0, 1) rows of 1000 (too many entries kept to narrow them) and the same with -inf
    entries, tied maxima, 20 near-equal top entries and a 1e3 spread."""
    scores = torch.randn(128, 1000, generator=torch.Generator().manual_seed(31), dtype=dtype)
    hard = scores.clone()
    hard[:16, ::3] = float("-inf")
    hard[16:32, :5] = hard[16:32].amax(-1, keepdim=True)
    hard[32:48, :20] = 6 + 1e-9 * torch.arange(20, dtype=dtype)
    hard[48:64] *= 1000
    return scores, hard


BOTH = (torch.float64, torch.float32)


@pytest.mark.parametrize(
    "alpha, spread, finishing",
    [
        (1.25, 1.0, BOTH),
        (1.3, 1.0, BOTH),
        (4 / 3, 1.0, BOTH),
        (1.35, 0.3, BOTH),
        (1.4, 0.5, (torch.float32,)),
        (1.45, 0.5, (torch.float32,)),
    ],
)
def test_finish_changes_nothing(alpha, spread, finishing, monkeypatch):
    """On a CPU tensor's "base" state below 3/2 (core._FINISH_ALPHA) the eager loop takes
    Halley's step at every evaluation and ends on a first-order finish
    (core._Buffers.finished) instead of its last evaluation where the last step is
    within core._finish_bound. Against the loop without them (core._FINISH_ALPHA below
    alpha), in float64: p within 1e-14, s / sum(s) within 1e-13 and sum(s) within 1e-13
    relative, p = 0 exactly where s = 0; float32 p within 1e-6 of float64 (the issue's
    bound). The finish ran in the dtypes ``finishing`` names (measured on these rows;
    above 4/3 its bound shrinks: 1.7e-4 at 1.35, 1.5e-5 at 1.4 and 8.8e-7 at 1.45 in
    float32, 2.3e-11 at 1.4 in float64, and a longer last step is evaluated instead),
    every finish on a step within core._finish_bound, and the rows' refused narrowing
    (rows of N(0, ``spread``^2): N(0, 1) rows are narrowed from about 1.37) left
    Halley's first step to core._Buffers.bent_total."""
    from tsallis.core import discrete as core

    seen = _finishes(monkeypatch)
    finish_alpha = core._FINISH_ALPHA
    finished = {torch.float64: [], torch.float32: []}
    for z in _finish_rows(F64):
        z = spread * z
        seen["finished"].clear()
        seen["bent"] = 0
        p, s, scale = core.entmax_map(z, alpha)
        assert seen["bent"] == 1
        finished[F64] += seen["finished"]
        monkeypatch.setattr(core, "_FINISH_ALPHA", 1.0)
        p0, s0, scale0 = core.entmax_map(z, alpha)
        monkeypatch.setattr(core, "_FINISH_ALPHA", finish_alpha)
        assert (p - p0).abs().max() <= 1e-14, alpha
        assert (s - s0).abs().max() <= 1e-13, alpha
        assert ((scale - scale0) / scale0).abs().max() <= 1e-13, alpha
        assert bool(((p == 0) == (s == 0)).all())  # one support
        assert (p.sum(-1) - 1).abs().max() <= 1e-13
        seen["finished"].clear()
        p32 = entmax(z.float(), alpha).double()
        finished[torch.float32] += seen["finished"]
        assert (p32 - entmax(z.float().double(), alpha)).abs().max() <= 1e-6, alpha
        assert (p32.sum(-1) - 1).abs().max() <= 1e-6
    for dtype, steps in finished.items():
        assert bool(steps) or dtype not in finishing, (alpha, dtype)
        assert max(steps, default=0.0) <= core._finish_bound(torch.finfo(dtype).eps, alpha)


@pytest.mark.parametrize("alpha", [1.25, 1.3, 4 / 3, 1.34, 1.35, 1.4, 1.45, 1.49])
def test_finish_bound_holds_at_40_digits(alpha):
    """core._finish_bound against the finish itself, in 40-digit mpmath: from states y in
    (0, 1] (log-spaced down to 1e-3 of h = (alpha - 1) |d|, and the entries at and
    outside the edge, which the finish keeps at 0) moved by d = +-the bound in float32
    and float64, s' = t [y - r d]_+ and p' = [y - (alpha - 1) d]_+ s' (r the generated
    finish_rate, t = y^(a - 1), s = y^a) are within eps / 8 of the exact s and p at the
    moved state. It fails with the square-root bound alone above 4/3 (s's error at the
    support edge is h^a there, not C d^2)."""
    from tsallis.core import discrete as core
    from tsallis.core._generated import discrete as gen

    mp.mp.dps = 40
    a = mp.mpf(core._state_exponents(alpha, 2)[1])  # s = y^a
    rate, scale = mp.mpf(float(gen.finish_rate(alpha))), mp.mpf(alpha) - 1
    for eps in (2.0**-23, 2.0**-52):
        bound = mp.mpf(core._finish_bound(eps, alpha))
        h = scale * bound
        ratios = [mp.mpf(10) ** (k / 8) for k in range(-24, 1 + 8 * 7)]
        states = [v * h for v in ratios] + [mp.mpf(k) / 64 for k in range(1, 65)]
        states += [-h * v for v in (0, mp.mpf(1) / 2, 1)]  # (at and outside the edge)
        worst = mp.mpf(0)
        for d in (bound, -bound):
            for y in states:
                if y > 1:
                    continue
                moved = max(y - scale * d, 0)
                if y > 0:  # the finish's kept entries
                    s_finish = y ** (a - 1) * max(y - rate * d, 0)
                    p_finish = max(y - scale * d, 0) * s_finish
                else:  # clamped at the floor: s = t = 0, and so s' and p'
                    s_finish = p_finish = mp.mpf(0)
                worst = max(worst, abs(s_finish - moved**a), abs(p_finish - moved ** (a + 1)))
        assert worst <= eps / 8 * (1 + 1e-9), (alpha, eps, float(worst))


def test_finish_gradients(monkeypatch):
    """The backward from the finished p and s / sum(s) (alpha = 1.3): the gradient with
    respect to z agrees with the loop without the finish within 1e-13 (float64), and
    float32's within 1e-6 of float64's."""
    from tsallis.core import discrete as core

    seen = _finishes(monkeypatch)
    z, _ = _finish_rows(F64)
    w = torch.randn(128, 1000, generator=torch.Generator().manual_seed(32), dtype=F64)
    grads = []
    finish_alpha = core._FINISH_ALPHA
    for bound in (finish_alpha, 1.0, finish_alpha):
        monkeypatch.setattr(core, "_FINISH_ALPHA", bound)
        x = z.clone().requires_grad_(True)
        (entmax(x, 1.3) * w).sum().backward()
        grads.append(x.grad)
    assert seen["finished"]
    assert (grads[0] - grads[1]).abs().max() <= 1e-13
    x = z.float().requires_grad_(True)
    (entmax(x, 1.3) * w.float()).sum().backward()
    assert (x.grad.double() - grads[2]).abs().max() <= 1e-6


def test_finish_refused_on_a_long_step(monkeypatch):
    """Where the last step is longer than core._finish_bound (here forced: a bound of 0
    but for rows already done), the loop evaluates at the predicted shift instead: p
    within 1e-14 of the loop without Halley's steps (float64), and no finish ran."""
    from tsallis.core import discrete as core

    seen = _finishes(monkeypatch)
    z, _ = _finish_rows(F64)
    finish_alpha = core._FINISH_ALPHA
    monkeypatch.setattr(core, "_FINISH_ALPHA", 1.0)
    p0 = core.entmax_newton(z, 1.3)
    monkeypatch.setattr(core, "_FINISH_ALPHA", finish_alpha)
    monkeypatch.setattr(core, "_finish_bound", lambda eps, alpha: -1.0)
    p = core.entmax_newton(z, 1.3)
    assert not seen["finished"]
    assert (p - p0).abs().max() <= 1e-14


def test_finish_after_narrowing_is_newtons(monkeypatch):
    """Rows narrowed after the first step (N(0, 10^2), alpha = 1.3) go on by Newton's
    steps from the left: no Halley step was formed, no finish ran, and p is within 1e-14
    of the loop without the finish (float64)."""
    from tsallis.core import discrete as core

    seen, widths = _finishes(monkeypatch), _narrowings(monkeypatch)
    z = 10 * torch.randn(128, 1000, generator=torch.Generator().manual_seed(33), dtype=F64)
    p = core.entmax_newton(z, 1.3)
    assert widths and widths[0] is not None
    assert not seen["finished"] and seen["bent"] == 0
    monkeypatch.setattr(core, "_FINISH_ALPHA", 1.0)
    assert (p - core.entmax_newton(z, 1.3)).abs().max() <= 1e-14


@settings(max_examples=25, deadline=None)
@given(
    alpha=st.floats(1.25, 1.49),
    exponent=st.floats(-1.0, 3.0),
    seed=st.integers(0, 2**31 - 1),
    dropped=st.sampled_from([0.0, 0.3, 0.9]),
)
def test_finish_matches_whole_loop_fuzzed(alpha, exponent, seed, dropped):
    """Fuzzed: (64, 512) rows at any alpha in [1.25, 1.49] (the finish's range), spreads
    from 0.1 to 1e3, a share of -inf entries (each row keeps a finite maximum): float64 p
    from the loop as it runs (Halley's steps and the finish, or narrowed) within 1e-14
    of the loop without them, summing to 1 within 1e-13; float32 within 1e-6 of float64
    on the same numbers."""
    from tsallis.core import discrete as core
    from tsallis.core import tuning

    spread = 10.0**exponent
    gen = torch.Generator().manual_seed(seed)
    z = spread * torch.randn(64, 512, generator=gen, dtype=F64)
    z[torch.rand(64, 512, generator=gen) < dropped] = float("-inf")
    z[:, 0] = spread  # (a finite maximum in every row)
    z = z.float().double()  # (float32 numbers, for the float32 comparison)
    saved = tuning.PARTITION_PAYS, core._FINISH_ALPHA
    try:
        tuning.PARTITION_PAYS = False
        p = core.entmax_newton(z, alpha)
        p32 = core.entmax_newton(z.float(), alpha).double()
        core._FINISH_ALPHA = 1.0
        p0 = core.entmax_newton(z, alpha)
    finally:
        tuning.PARTITION_PAYS, core._FINISH_ALPHA = saved
    assert (p - p0).abs().max() <= 1e-14
    assert (p.sum(-1) - 1).abs().max() <= 1e-13
    assert (p32 - p).abs().max() <= 1e-6


@pytest.mark.parametrize("alpha", [1.05, 1.25, 1.3, 4 / 3, 1.4, 1.45])
def test_the_finish_coefficients(alpha):
    """The generated finish_rate and finish_error (core._Buffers.finished) against an
    oracle at 50 digits (mpmath): at a state y (0.05 to 1) moved by d = 1e-9, p' = (y -
    (alpha - 1) d) t (y - r d) and s' = t (y - r d) differ from y moved, to the power 1 /
    (alpha - 1) and (2 - alpha) / (alpha - 1), by finish_error d^2 times t and times
    y^((4 - 3 alpha) / (alpha - 1)), within 1e-6 relative (the next term is of order d)."""
    from tsallis.core._generated import discrete as gen

    with mp.workdps(50):
        _check_finish_coefficients(alpha, gen)


def _check_finish_coefficients(alpha: float, gen: ModuleType) -> None:
    a = mp.mpf(alpha) - 1
    rate, error = mp.mpf(float(gen.finish_rate(alpha))), float(gen.finish_error(alpha))
    d = mp.mpf("1e-9")
    for y in (mp.mpf("0.05"), mp.mpf("0.4"), mp.mpf(1)):
        t = y ** ((3 - 2 * (a + 1)) / a)
        s_finish = t * (y - rate * d)
        p_finish = (y - a * d) * s_finish
        p_error = ((y - a * d) ** (1 / a) - p_finish) / (t * d**2)
        s_error = ((y - a * d) ** ((1 - a) / a) - s_finish) / (y ** ((4 - 3 * (a + 1)) / a) * d**2)
        for measured in (p_error, s_error):
            assert abs(float(measured) - error) <= 1e-6 * abs(error), (alpha, float(y))


@pytest.mark.parametrize("alpha", [0.7, 1.0, 1.01, 1.3, 1.5, 1.99, 2.0, 2.5, 4.0])
def test_float32_within_1e6_of_float64(alpha):
    """float32 probabilities within 1e-6 absolute of the float64 op on the same (float32)
    numbers (alpha > 2 runs in float64 inside, so there the two agree to rounding). At
    alpha = 1.99 the loop once stopped on a step of 4 ulps of c, 1.3e-6 off (hard rows)."""
    x = torch.randn(256, 1000, generator=torch.Generator().manual_seed(4)).double()
    for z in (x, _hard_rows(F64)):
        p32 = entmax(z.float(), alpha).double()
        assert (p32 - entmax(z.float().double(), alpha)).abs().max() <= 1e-6


@pytest.mark.parametrize("alpha", [1.7, 1.9])
def test_largest_quarter_shift_is_checked(alpha, monkeypatch):
    """The largest quarter's loop takes its last step below sqrt(eps) as close enough;
    near alpha = 2 a row whose support is about to gain an entry can stop there far off
    (float32 N(0, 0.5^2) rows of 1000 at 1.9: p 7.5e-6 off before the check). The
    evaluation at that shift checks it (core._converged): the rows it fails are
    finished by the loop, and every probability is within the issue's 1e-6 of the
    float64 op on the same numbers; at 1.9 the check did fail some row. The same on one
    row (1-D input, whose failed check the path had ignored: 7.6e-6 off): row 53 of
    those rows, with 64536 entries at -1000 appended (2^16 entries take the path). The
    quarter's loop from the groups' bound (_grouped_shift) stops elsewhere and no row of
    these failed the check: p is checked with it, then the failures without it."""
    from tsallis.core import discrete as core
    from tsallis.core import tuning

    x = 0.5 * torch.randn(1024, 1000, generator=torch.Generator().manual_seed(12))
    assert (entmax(x, alpha).double() - entmax(x.double(), alpha)).abs().max() <= 1e-6
    monkeypatch.setattr(tuning, "GROUPED_MIN_LENGTH", 10**9)
    failed = []
    original = core._converged
    monkeypatch.setattr(
        core, "_converged", lambda *a: (r := original(*a), failed.append(int((~r).sum())))[0]
    )
    p32 = entmax(x, alpha).double()
    assert failed  # (the largest quarter's path ran)
    assert (p32 - entmax(x.double(), alpha)).abs().max() <= 1e-6
    if alpha == 1.9:
        assert failed[0] > 0
        row = torch.cat([x[53], torch.full((64536,), -1000.0)])
        failed.clear()
        assert (entmax(row, alpha).double() - entmax(row.double(), alpha)).abs().max() <= 1e-6
        assert failed[0] == 1


def test_continuous_in_alpha_at_softmax_and_sparsemax():
    x = torch.randn(32, 50, generator=torch.Generator().manual_seed(5), dtype=F64)
    assert (entmax(x, 1 + 1e-9) - torch.softmax(x, -1)).abs().max() <= 1e-8
    assert (entmax(x, 2 - 1e-9) - sparsemax(x)).abs().max() <= 1e-8


@pytest.mark.parametrize("alpha", [0.8, 1.0, 1.25, 1.5, 2.0, 3.0])
def test_gradcheck_in_x(alpha):
    x = torch.randn(5, 7, generator=torch.Generator().manual_seed(6), dtype=F64)
    assert torch.autograd.gradcheck(lambda v: entmax(v, alpha), (x.requires_grad_(True),))


def test_gradcheck_in_x_and_per_row_alpha_and_losses():
    gen = torch.Generator().manual_seed(7)
    x = torch.randn(6, 7, generator=gen, dtype=F64).requires_grad_(True)
    alpha = torch.tensor([[1.01], [1.3], [2.0], [2.5], [0.8], [1.0]], dtype=F64)
    alpha.requires_grad_(True)
    assert torch.autograd.gradcheck(lambda v, a: entmax(v, a), (x, alpha))
    target = torch.tensor([0, 3, 1, 6, 2, -100])
    assert torch.autograd.gradcheck(lambda v, a: entmax_loss(v, target, a), (x, alpha))
    dist = torch.softmax(torch.randn(6, 7, generator=gen, dtype=F64), -1)
    assert torch.autograd.gradcheck(
        lambda v, a: entmax_loss(v, dist, a, reduction="none"), (x, alpha)
    )


@pytest.mark.parametrize("alpha", [0.5, 1.0, 1.3, 1.5, 2.0, 2.5, 5.0])
def test_second_derivatives_of_the_map(alpha):
    """Double backward (create_graph=True, as gradient penalties, meta-learning and
    Hessian-vector products use it): gradgradcheck's finite differences of the backward,
    float64, on a masked row and along dim 0 too. Before, the backward's in-place
    products raised "functions with out=... arguments don't support automatic
    differentiation"."""
    gen = torch.Generator().manual_seed(31)
    x = torch.randn(4, 6, generator=gen, dtype=F64).requires_grad_(True)
    mask = torch.ones(4, 6, dtype=torch.bool)
    mask[1, :3] = False
    assert torch.autograd.gradgradcheck(lambda v: entmax(v, alpha, mask=mask), (x,))
    assert torch.autograd.gradgradcheck(lambda v: entmax(v, alpha, dim=0), (x,))


def test_second_derivatives_in_a_learned_alpha():
    """Double backward with alpha requiring grad, one per row (on both sides of 2) and
    one for all rows: the second derivatives in x and alpha, mixed ones included."""
    gen = torch.Generator().manual_seed(32)
    x = torch.randn(4, 6, generator=gen, dtype=F64).requires_grad_(True)
    per_row = torch.tensor([[0.7], [1.2], [1.7], [2.6]], dtype=F64).requires_grad_(True)
    shared = torch.tensor(1.4, dtype=F64).requires_grad_(True)
    for alpha in (per_row, shared):
        assert torch.autograd.gradgradcheck(lambda v, a: entmax(v, a), (x, alpha))


def test_hessian_vector_products_on_large_rows():
    """On (256, 300) float64 rows (the large-call paths of the loop), u^T H against
    central differences of the gradient along u (h = 1e-7: at alpha = 3 a step of 1e-5
    crossed the support edge of an entry with p = 3e-5): within 1e-6 of the scale."""
    gen = torch.Generator().manual_seed(33)
    x = torch.randn(256, 300, generator=gen, dtype=F64).requires_grad_(True)
    w, u = (torch.randn(256, 300, generator=gen, dtype=F64) for _ in range(2))
    target = torch.randint(0, 300, (256,), generator=gen)
    objectives = [lambda v, a=a: (entmax(v, a) * w).sum() for a in (1.3, 1.5, 2.0, 3.0)]
    objectives.append(lambda v: entmax_loss(v, target, 1.3, "sum"))
    for objective in objectives:
        (grad,) = torch.autograd.grad(objective(x), x, create_graph=True)
        (product,) = torch.autograd.grad((grad * u).sum(), x)
        sides = []
        for step in (1e-7, -1e-7):
            moved = (x.detach() + step * u).requires_grad_(True)
            sides.append(torch.autograd.grad(objective(moved), moved)[0])
        differences = (sides[0] - sides[1]) / 2e-7
        assert (product - differences).abs().max() <= 1e-6 * differences.abs().max()


def test_second_derivatives_of_the_losses():
    """Double backward of entmax_loss in x, a distribution target and a per-row alpha
    (gradgradcheck, float64), and in x for class targets with an ignored row. Before, the
    gradient p - y had no graph: a gradient penalty through it silently took entmax's
    Jacobian as 0."""
    gen = torch.Generator().manual_seed(34)
    x = torch.randn(4, 6, generator=gen, dtype=F64).requires_grad_(True)
    dist = torch.softmax(torch.randn(4, 6, generator=gen, dtype=F64), -1).requires_grad_(True)
    alpha = torch.tensor([[0.8], [1.3], [2.0], [2.5]], dtype=F64).requires_grad_(True)
    assert torch.autograd.gradgradcheck(
        lambda v, y, a: entmax_loss(v, y, a, reduction="none"), (x, dist, alpha)
    )
    target = torch.tensor([0, 5, -100, 2])
    for a in (1.0, 1.5, 2.0, 3.0):
        assert torch.autograd.gradgradcheck(lambda v, a=a: entmax_loss(v, target, a), (x,))
    (grad,) = torch.autograd.grad(entmax_loss(x, target, 1.5, "sum"), x, create_graph=True)
    assert grad.requires_grad


def test_target_gradient_off_both_supports():
    """The gradient in a distribution target y is -x - dH_alpha(y)/dy: against central
    differences of float64 losses where y > 0, and where p = y = 0 against the one-sided
    slope typed from eq 6, -x - 1 / (alpha (alpha - 1)) (one-sided differences converge
    like step^(alpha - 1) there). Before, -x was dropped there (0 at alpha = 2 where it
    is 2.5), and an x = -inf entry with y = 0 gave NaN; it is now 0 (excluded, like a
    masked entry). For alpha <= 1 dH/dy is +inf at y = 0 and the entropy's part is left
    out (-x alone)."""
    x = torch.tensor([[0.0, -3.0, 1.0, -math.inf]], dtype=F64)
    base = torch.tensor([[0.3, 0.0, 0.7, 0.0]], dtype=F64)
    for alpha in (0.5, 1.0, 1.5, 2.0, 3.0):
        y = base.clone().requires_grad_(True)
        entmax_loss(x, y, alpha).backward()
        for j in (0, 2):
            sides = []
            for step in (1e-6, -1e-6):
                moved = base.clone()
                moved[0, j] += step
                sides.append(float(entmax_loss(x, moved, alpha)))
            slope = (sides[0] - sides[1]) / 2e-6
            assert abs(float(y.grad[0, j]) - slope) <= 1e-7, (alpha, j)
        edge = 3.0 - (1 / (alpha * (alpha - 1)) if alpha > 1 else 0.0)
        assert abs(float(y.grad[0, 1]) - edge) <= 1e-14, alpha
        assert float(y.grad[0, 3]) == 0.0


@pytest.mark.parametrize("dtype", [torch.float32, F64])
def test_loss_entropy_on_the_support_matches_the_whole_rows(dtype):
    """core.entropy_rows sums the entropy term over p's positive entries alone where
    nothing differentiates p (the losses' forward): the same H_alpha(p) as over the whole
    rows, within 4 ulps of the row's scale, for sparse rows (1.3 to 2), dense ones (0.7:
    the whole rows), NumPy arrays, a per-row alpha and a p autograd tracks (the whole
    rows, with its gradient)."""
    from tsallis.core import discrete as core
    from tsallis.core._generated import deformed as generated

    gen = torch.Generator().manual_seed(35)
    x = torch.randn(64, 500, generator=gen, dtype=dtype)
    eps = torch.finfo(dtype).eps
    for alpha in (0.7, 1.3, 1.5, 2.0):
        p = entmax(x, alpha)
        whole = generated.tsallis_entropy_term(p, alpha).sum(-1)
        scale = float(whole.abs().max())
        assert (core.entropy_rows(p, alpha) - whole).abs().max() <= 4 * eps * scale
        on_numpy = core.entropy_rows(p.numpy(), alpha)
        assert np.abs(on_numpy - whole.numpy()).max() <= 4 * eps * scale
    per_row = torch.linspace(1.2, 2.0, 64, dtype=dtype)[:, None]
    p = entmax(x, per_row)
    whole = generated.tsallis_entropy_term(p, per_row).sum(-1)
    assert torch.equal(core.entropy_rows(p, per_row), whole)
    tracked = entmax(x, 1.5).requires_grad_(True)
    core.entropy_rows(tracked, 1.5).sum().backward()
    copy = tracked.detach().clone().requires_grad_(True)
    generated.tsallis_entropy_term(copy, 1.5).sum().backward()
    assert torch.equal(tracked.grad, copy.grad)


def test_compiled_vmap_falls_back_or_says_why():
    """Under torch.compile of torch.func.vmap the compiled map (its buffers written with
    out=, which vmap does not batch) steps aside: without fullgraph the vmap runs eagerly
    (float32, within 1e-6 of eager vmap), with fullgraph a NotImplementedError says what
    to do instead (not Torch's batching-rule error)."""
    func = pytest.importorskip("torch.func")
    torch._dynamo.reset()
    x = torch.randn(4, 3, 7, generator=torch.Generator().manual_seed(5))
    target = torch.zeros(3, dtype=torch.long)
    alphas = torch.rand(4, 3, 1, generator=torch.Generator().manual_seed(6)) + 1.1
    ops = (lambda v: entmax(v, 1.5), sparsemax, lambda v: entmax_loss(v, target, 1.3))
    cases = [(op, x) for op in ops] + [(lambda a: entmax(x[0], a), alphas)]  # (alpha batched)
    for op, batch in cases:
        want = func.vmap(op)(batch)
        got = torch.compile(func.vmap(op))(batch)
        assert (got - want).abs().max() <= 1e-6
        torch._dynamo.reset()
        with pytest.raises(Exception, match="apply vmap outside the compiled function"):
            torch.compile(func.vmap(op), fullgraph=True)(batch)


def test_compiled_shape_errors_are_value_errors():
    """A mask or a per-row alpha of the wrong shape, and continuous attention's loc and
    scale that do not broadcast, raise the eager ValueError under torch.compile too (the
    shape check is plain Python, tsallis.core.validation.broadcast_shape). Before, a
    failing torch.broadcast_shapes inside try/except became Dynamo's TorchRuntimeError;
    with fullgraph=True Torch reports the ValueError inside its own error."""
    from torch_bridge import GaussianRBF, continuous_attention

    x = torch.randn(6, 9, generator=torch.Generator().manual_seed(40))
    basis = GaussianRBF(torch.linspace(0.0, 1.0, 4), torch.full((4,), 0.2))
    bad = (
        (lambda: entmax(x, torch.rand(1, 6) + 1.1, dim=0), "alpha of shape"),
        (lambda: entmax(x, 1.5, mask=torch.ones(3, 9, dtype=torch.bool)), "mask of shape"),
        (lambda: sparsemax(x, mask=torch.ones(9, 1, dtype=torch.bool)), "mask of shape"),
        (lambda: continuous_attention(torch.zeros(3), torch.ones(2), basis), "must broadcast"),
    )
    for call, words in bad:
        with pytest.raises(ValueError, match=words):
            call()
        torch._dynamo.reset()
        with pytest.raises(ValueError, match=words):
            torch.compile(call)()
        torch._dynamo.reset()
        with pytest.raises(Exception, match=words):
            torch.compile(call, fullgraph=True)()


def _compiled_value_check_cases() -> tuple:
    """(op, bad input, the error's words) for the compiled value checks below."""
    from torch_bridge import ev_softmax

    gen = torch.Generator().manual_seed(41)
    x = torch.randn(4, 5, generator=gen)
    nan_x = x.clone()
    nan_x[1, 2] = math.nan
    inf_x = x.clone()
    inf_x[0, 0] = math.inf
    bad_alpha = torch.tensor([[1.5], [-1.0], [2.5], [1.2]])
    negative = torch.rand(4, 5, generator=gen) - 0.5
    nan_words = r"NaN( or \+inf)?"
    return (
        (lambda v: entmax(v, 1.3), nan_x, nan_words),
        (lambda v: sparsemax(v), inf_x, r"\+inf"),
        (lambda v: ev_softmax(v), nan_x, nan_words),
        (lambda v: entmax(v, bad_alpha), x, "alpha must be finite and > 0"),
        (lambda v: entmax_loss(v, torch.tensor([0, 1, 2, 9])), x, "target must lie in"),
        (lambda v: sparsemax_loss(v, torch.tensor([0, -3, 2, 1])), x, "target must lie in"),
        (lambda v: entmax_loss(v, negative), x, "finite and >= 0"),
    )


def _check_compiled_value_errors(**options: bool) -> None:
    for op, value, words in _compiled_value_check_cases():
        torch._dynamo.reset()
        with pytest.raises(ValueError, match=words):
            op(value)
        with pytest.raises(RuntimeError, match=words):
            torch.compile(op, **options)(value)


def test_compiled_value_checks_raise_on_cpu():
    """Under torch.compile on the CPU the value checks that eager mode makes by host reads
    are asserts in the compiled code: NaN or +inf in a valid entry (entmax, sparsemax,
    ev_softmax), an alpha tensor <= 0, a class index out of range and a negative target
    distribution raise RuntimeError naming the check, with fullgraph=True
    (before, they returned values: a wrong map at alpha = -1, NaN, a loss; seen failing).
    A NaN under the mask stays allowed (within 1e-6 of eager mode)."""
    _check_compiled_value_errors(fullgraph=True)
    x = _compiled_value_check_cases()[0][1]  # (NaN at [1, 2])
    masked = torch.ones(4, 5, dtype=torch.bool)
    masked[1, 2] = False
    torch._dynamo.reset()
    compiled = torch.compile(lambda v: entmax(v, 1.5, mask=masked), fullgraph=True)
    assert (compiled(x) - entmax(x, 1.5, mask=masked)).abs().max() <= 1e-6


@pytest.mark.slow
def test_compiled_value_checks_raise_dynamic():
    """As above, without fullgraph and with dynamic=True."""
    _check_compiled_value_errors()
    _check_compiled_value_errors(fullgraph=True, dynamic=True)


@given(
    st.lists(st.lists(st.integers(0, 3), min_size=0, max_size=4).map(tuple), min_size=1, max_size=3)
)
@settings(max_examples=300, deadline=None)
def test_broadcast_shape_is_numpys(shapes):
    """broadcast_shape agrees with np.broadcast_shapes: the same shape, or None where
    NumPy raises."""
    from tsallis.core.validation import broadcast_shape

    try:
        want = tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        want = None
    assert broadcast_shape(*shapes) == want


def test_torch_func_transforms():
    """torch.func over the maps and losses (float64): vmap (also along another dim, with a
    batched per-row alpha and mask), per-sample gradients vmap(grad), jacrev, jacfwd and
    hessian, against plain calls and torch.autograd.functional. Before, every transform
    raised (the Functions had no setup_context; vmap met host reads)."""
    import warnings as _warnings

    func = torch.func
    gen = torch.Generator().manual_seed(36)
    x = torch.randn(3, 5, 6, generator=gen, dtype=F64)
    w = torch.randn(6, generator=gen, dtype=F64)
    row = x[0, 0]
    with _warnings.catch_warnings():
        _warnings.simplefilter("ignore")  # (functorch's fallback notices for addcmul_)
        for alpha in (0.7, 1.0, 1.3, 2.0, 3.0):

            def mapped(v, a=alpha):
                return entmax(v, a)

            assert torch.equal(func.vmap(mapped)(x), entmax(x, alpha))
            along = func.vmap(lambda v, a=alpha: entmax(v, a, dim=0), in_dims=1, out_dims=1)
            assert torch.equal(along(x), entmax(x, alpha, dim=0))
            jacobian = torch.autograd.functional.jacobian(mapped, row)
            assert (func.jacrev(mapped)(row) - jacobian).abs().max() <= 1e-15
            assert (func.jacfwd(mapped)(row) - jacobian).abs().max() <= 1e-15

            def objective(v, a=alpha):
                return (entmax(v, a) * w).sum()

            hessian = torch.autograd.functional.hessian(objective, row)
            assert (func.hessian(objective)(row) - hessian).abs().max() <= 1e-14
            target = torch.tensor([1, 3, 0, 5, 2])

            def loss(v, t, a=alpha):
                return entmax_loss(v[None], t[None], a, "sum")

            per_sample = func.vmap(func.grad(loss))(x[0], target)
            whole = torch.autograd.functional.jacobian(
                lambda v, a=alpha, t=target: entmax_loss(v, t, a, "sum"), x[0]
            )
            assert (per_sample - whole).abs().max() <= 1e-15
        alpha = torch.tensor([[1.2], [1.6], [2.5]], dtype=F64)
        mask = torch.ones(3, 6, dtype=torch.bool)
        mask[1, 0] = False
        got = func.vmap(lambda v, a, m: entmax(v, a, mask=m))(x[:, 0], alpha, mask)
        assert torch.equal(got, entmax(x[:, 0], alpha, mask=mask))
        with torch.autograd.forward_ad.dual_level():  # (outside torch.func: dual tensors)
            tangent = torch.randn(6, generator=gen, dtype=F64)
            dual = torch.autograd.forward_ad.make_dual(row, tangent)
            out = torch.autograd.forward_ad.unpack_dual(entmax(dual, 1.5)).tangent
        jacobian = torch.autograd.functional.jacobian(lambda v: entmax(v, 1.5), row)
        assert (out - jacobian @ tangent).abs().max() <= 1e-15  # (before: None, dropped)
        derivative = torch.autograd.functional.jacobian(lambda a: entmax(row, a), alpha[:1, 0])
        assert (
            func.jacfwd(lambda a: entmax(row, a))(alpha[:1, 0]) - derivative
        ).abs().max() <= 1e-15


def test_torch_func_ensembles_with_learned_alphas():
    """Model ensembling (torch.func.stack_module_state, functional_call under vmap) with
    a learned alpha per model in Entmax and EntmaxLoss, and per-sample gradients in a
    per-row alpha (float64): the forward against each model's own call, vmap(grad) against
    each model's backward, within 1e-15 of their scale. Before, a 0-dim alpha that vmap
    batched was read on the host as a float (vmap raised), and the alpha-gradient's
    support-only path indexed by a boolean mask under vmap (raised)."""
    import copy
    import warnings as _warnings

    func = torch.func

    class Model(torch.nn.Module):
        def __init__(self, seed: int) -> None:
            super().__init__()
            torch.manual_seed(seed)
            self.linear = torch.nn.Linear(5, 6).double()
            self.act = Entmax(alpha=torch.nn.Parameter(torch.tensor(0.8 + 0.7 * seed, dtype=F64)))
            self.fy = EntmaxLoss(
                alpha=torch.nn.Parameter(torch.tensor(1.1 + 0.9 * seed, dtype=F64))
            )

        def forward(self, v, t):
            scores = self.linear(v)
            return self.act(scores), self.fy(scores, t)

    models = [Model(seed) for seed in range(3)]
    params, buffers = func.stack_module_state(models)
    base = copy.deepcopy(models[0]).to("meta")
    gen = torch.Generator().manual_seed(37)
    x, target = torch.randn(4, 5, generator=gen, dtype=F64), torch.tensor([0, 2, 5, 1])
    weight = torch.randn(6, generator=gen, dtype=F64)

    def call(p, b, v, t):
        return func.functional_call(base, (p, b), (v, t))

    def objective(p, b, v, t):
        probabilities, loss = call(p, b, v, t)
        return (probabilities * weight).sum() + loss

    with _warnings.catch_warnings():
        _warnings.simplefilter("ignore")  # (functorch's fallback notices)
        probabilities, losses = func.vmap(call, (0, 0, None, None))(params, buffers, x, target)
        grads = func.vmap(func.grad(objective), (0, 0, None, None))(params, buffers, x, target)
    for i, model in enumerate(models):
        own_p, own_loss = model(x, target)
        assert (probabilities[i] - own_p).abs().max() <= 1e-15
        assert abs(losses[i] - own_loss) <= 1e-15 * max(1.0, abs(own_loss))
        model.zero_grad()
        ((own_p * weight).sum() + own_loss).backward()
        for name, parameter in model.named_parameters():
            scale = max(1.0, parameter.grad.abs().max())
            assert (grads[name][i] - parameter.grad).abs().max() <= 1e-15 * scale, name
            assert parameter.grad.abs().max() > 0, name  # (a gradient that can be wrong)
    rows, alphas = (
        x @ torch.randn(5, 6, generator=gen, dtype=F64),
        torch.rand(4, 1, generator=gen, dtype=F64) + 1.05,
    )

    def row_objective(v, a):
        return (entmax(v, a) * weight).sum()

    with _warnings.catch_warnings():
        _warnings.simplefilter("ignore")
        d_rows, d_alphas = func.vmap(func.grad(row_objective, argnums=(0, 1)))(rows, alphas)
    for i in range(4):
        v = rows[i].clone().requires_grad_()
        a = alphas[i].clone().requires_grad_()
        (entmax(v, a) * weight).sum().backward()
        assert (d_rows[i] - v.grad).abs().max() <= 1e-15 * max(1.0, v.grad.abs().max())
        assert abs(d_alphas[i].item() - a.grad.item()) <= 1e-15 * max(1.0, abs(a.grad.item()))
    # dp/dalpha per sample, both ways (reverse: the backward's in-place product under two
    # vmap levels raised before)
    with _warnings.catch_warnings():
        _warnings.simplefilter("ignore")
        reverse = func.vmap(func.jacrev(entmax, argnums=1))(rows, alphas)
        forward = func.vmap(func.jacfwd(entmax, argnums=1))(rows, alphas)
    for i in range(4):
        plain = torch.autograd.functional.jacobian(lambda a, i=i: entmax(rows[i], a), alphas[i])
        assert (reverse[i] - plain).abs().max() <= 1e-15 * max(1.0, plain.abs().max())
        assert (forward[i] - plain).abs().max() <= 1e-15 * max(1.0, plain.abs().max())


def test_alpha_gradient_matches_central_differences_of_mpmath():
    """d/dalpha of <w, entmax(x, alpha)> against central differences of the mpmath map."""
    row = np.array([0.3, -1.2, 0.9, 0.15, -0.4])  # (0.1 sits on the alpha = 2 support edge)
    w = np.array([1.0, -2.0, 0.5, 3.0, -1.0])
    for alpha in (1.0, 1.3, 2.0, 2.6):
        a = torch.tensor([alpha], dtype=F64, requires_grad=True)
        (entmax(torch.tensor(row), a) * torch.tensor(w)).sum().backward()
        h = 1e-6
        diff = (_exact(row, alpha + h) - _exact(row, alpha - h)) @ w / (2 * h)
        assert abs(float(a.grad) - diff) <= 1e-8 * max(1.0, abs(diff))


def test_losses_have_their_closed_form_values_and_gradients():
    x = torch.tensor([[0.0, 10.0], [1.0, 0.5]], dtype=F64, requires_grad=True)
    target = torch.tensor([1, 0])
    loss = sparsemax_loss(x, target, reduction="none")
    p = sparsemax(x.detach())
    # sparsemax FY loss: <p - y, x> + (1 - |p|^2) / 2 (H_2 = (1 - sum p^2) / 2)
    y = torch.nn.functional.one_hot(target, 2).double()
    expected = ((p - y) * x.detach()).sum(-1) + (1 - (p * p).sum(-1)) / 2
    assert (loss - expected).abs().max() <= 1e-15
    loss.sum().backward()
    assert (x.grad - (p - y)).abs().max() <= 1e-15
    assert float(entmax_loss(x.detach(), torch.tensor([-100, -100]))) == 0.0


@pytest.mark.parametrize("half", [torch.float16, torch.bfloat16])
def test_half_precision_losses_are_float32s(half):
    """float16 / bfloat16 scores: the losses are computed in float32 and returned so, as
    the map is computed (in float16 the rounding of <p - y, x> made losses of scores of
    1e2-1e3 negative, down to -0.08): against float64 on the same numbers within 1e-6
    relative (float32's rounding of the sums), every loss >= 0, and the gradient in x
    finite, of x's dtype."""
    gen = torch.Generator().manual_seed(41)
    x = (300 * torch.randn(64, 50, generator=gen, dtype=F64)).to(half).requires_grad_(True)
    indices = torch.randint(0, 50, (64,), generator=gen)
    spread = torch.softmax(3 * torch.randn(64, 50, generator=gen, dtype=F64), -1).to(half)
    for alpha in (0.5, 1.0, 1.4, 2.0, 3.0):
        for target in (indices, spread):
            loss = entmax_loss(x, target, alpha, reduction="none")
            assert loss.dtype == torch.float32
            assert bool((loss >= 0).all())
            exact = target if target.dtype == torch.int64 else target.double()
            reference = entmax_loss(x.detach().double(), exact, alpha, reduction="none")
            assert ((loss.double() - reference).abs() / reference).max() <= 1e-6
            x.grad = None
            loss.sum().backward()
            assert x.grad.dtype == half and bool(torch.isfinite(x.grad).all())


def test_bad_distribution_targets_raise():
    """A distribution target with a NaN, infinite or negative entry raises ValueError (it
    gave a NaN loss, or one unbounded below), as does one on another shape."""
    x = torch.randn(3, 4, generator=torch.Generator().manual_seed(42))
    for bad in (float("nan"), float("inf"), -0.25):
        target = torch.full((3, 4), 0.25)
        target[1, 2] = bad
        with pytest.raises(ValueError, match="finite and >= 0"):
            entmax_loss(x, target, 1.5)
    with pytest.raises(ValueError, match="x's shape"):
        sparsemax_loss(x, torch.full((3, 5), 0.2))


def test_losses_agree_with_the_entmax_package():
    """The package's maps and losses on the same rows, as the README's table maps them
    (float64, its exact sort-based 3/2 and sparsemax; entmax_bisect at 80 iterations):
    within 1e-12 (1e-10 for the bisection), and its reduction name "elementwise_mean"
    is our "mean" (with an ignore_index >= 0, the only one the package applies)."""
    package = pytest.importorskip("entmax")
    gen = torch.Generator().manual_seed(12)
    x = torch.randn(40, 300, generator=gen, dtype=F64) * 2
    assert (sparsemax(x, 0) - package.sparsemax(x, 0)).abs().max() <= 1e-12
    assert (entmax(x, 1.5, 0) - package.entmax15(x, 0)).abs().max() <= 1e-12
    bisected = package.entmax_bisect(x, 1.3, -1, n_iter=80)
    assert (entmax(x, 1.3) - bisected).abs().max() <= 1e-10
    target = torch.randint(0, 300, (40,), generator=gen)
    assert (
        sparsemax_loss(x, target, "none") - package.sparsemax_loss(x, target)
    ).abs().max() <= 1e-12
    ours = entmax_loss(x, target, 1.5, "none")
    assert (ours - package.entmax15_loss(x, target)).abs().max() <= 1e-12
    bisect = package.entmax_bisect_loss(x, target, 1.3, n_iter=80)
    assert (entmax_loss(x, target, 1.3, "none") - bisect).abs().max() <= 1e-10
    skipped = target.clone()
    skipped[::3] = 7
    reference = package.Entmax15Loss(ignore_index=7, reduction="elementwise_mean")(x, skipped)
    for name in ("elementwise_mean", "mean"):
        loss = entmax_loss(x, skipped, 1.5, name, ignore_index=7)
        assert abs(float(loss) - float(reference)) <= 1e-12


def test_loss_modules_are_the_functions():
    """EntmaxLoss and SparsemaxLoss give the functional losses bit for bit (every
    reduction, ignore_index, distribution targets), a learned alpha gets the function's
    gradient, and a bad reduction is refused when the module is built."""
    gen = torch.Generator().manual_seed(21)
    x = torch.randn(6, 9, generator=gen, dtype=F64)
    target = torch.tensor([0, 3, 8, 3, 1, 5])
    soft = torch.softmax(torch.randn(6, 9, generator=gen, dtype=F64), -1)
    for reduction in ("mean", "sum", "none", "elementwise_mean"):
        for goal in (target, soft):
            module = EntmaxLoss(1.3, reduction, ignore_index=3)(x, goal)
            assert torch.equal(module, entmax_loss(x, goal, 1.3, reduction, ignore_index=3))
            module = SparsemaxLoss(reduction, ignore_index=3)(x, goal)
            assert torch.equal(module, sparsemax_loss(x, goal, reduction, ignore_index=3))
    assert float(EntmaxLoss(1.3, "sum", ignore_index=3)(x, target)) > 0.1  # (not all skipped)
    learned = torch.nn.Parameter(torch.tensor(1.4, dtype=F64))
    criterion = EntmaxLoss(alpha=learned)
    assert [p is learned for p in criterion.parameters()] == [True]
    criterion(x, target).backward()
    alpha = torch.tensor(1.4, dtype=F64, requires_grad=True)
    entmax_loss(x, target, alpha).backward()
    assert learned.grad is not None and abs(float(learned.grad - alpha.grad)) <= 1e-15
    assert abs(float(alpha.grad)) > 1e-3
    for build in (lambda: EntmaxLoss(1.5, "average"), lambda: SparsemaxLoss("batchmean")):
        with pytest.raises(ValueError, match="reduction"):
            build()
    assert repr(EntmaxLoss(alpha=learned)) == (
        "EntmaxLoss(alpha=tensor, reduction='mean', ignore_index=-100)"
    )


def test_loss_modules_agree_with_the_entmax_package_modules():
    """The package's loss modules on the same rows (float64; its ignore_index applies
    only when >= 0): within 1e-12 (1e-10 against its bisection at 80 iterations)."""
    package = pytest.importorskip("entmax")
    gen = torch.Generator().manual_seed(22)
    x = torch.randn(30, 200, generator=gen, dtype=F64) * 3
    target = torch.randint(0, 200, (30,), generator=gen)
    target[::4] = 5
    for reduction in ("elementwise_mean", "sum", "none"):
        pairs = [
            (SparsemaxLoss(reduction, 5), package.SparsemaxLoss(None, 5, reduction), 1e-12),
            (EntmaxLoss(1.5, reduction, 5), package.Entmax15Loss(None, 5, reduction), 1e-12),
            (
                EntmaxLoss(1.3, reduction, 5),
                package.EntmaxBisectLoss(1.3, 80, 5, reduction),
                1e-10,
            ),
        ]
        for ours, theirs, tolerance in pairs:
            assert (ours(x, target) - theirs(x, target)).abs().max() <= tolerance


def test_the_entmax_packages_settings_are_accepted_and_change_nothing():
    """k, n_iter and ensure_sum_one (the package's top-k guess, bisection steps and
    renormalizing) are taken by every map, loss and module as keywords and leave the
    result bit for bit as without them (a k below the support size too, and n_iter = 1,
    which leaves the package's bisection far off); bad values raise, naming the argument."""
    gen = torch.Generator().manual_seed(23)
    x = torch.randn(8, 50, generator=gen, dtype=F64) * 3
    target = torch.randint(0, 50, (8,), generator=gen)
    assert int((sparsemax(x) > 0).sum(-1).max()) > 2  # (k = 2 is below some supports)
    for k in (None, 1, 2, 50, 10**6):
        assert torch.equal(sparsemax(x, k=k), sparsemax(x))
        assert torch.equal(entmax(x, 1.5, k=k), entmax(x, 1.5))
        assert torch.equal(Sparsemax(k=k)(x), sparsemax(x))
        assert torch.equal(Entmax(1.5, k=k)(x), entmax(x, 1.5))
        assert torch.equal(sparsemax_loss(x, target, k=k), sparsemax_loss(x, target))
        assert torch.equal(entmax_loss(x, target, 1.5, k=k), entmax_loss(x, target, 1.5))
        assert torch.equal(SparsemaxLoss(k=k)(x, target), sparsemax_loss(x, target))
        assert torch.equal(EntmaxLoss(1.5, k=k)(x, target), entmax_loss(x, target, 1.5))
    for n_iter in (None, 0, 1, 50):
        for ensure in (True, False):
            p = entmax(x, 1.3, n_iter=n_iter, ensure_sum_one=ensure)
            assert torch.equal(p, entmax(x, 1.3))
        assert torch.equal(Entmax(1.3, n_iter=n_iter)(x), entmax(x, 1.3))
        loss = entmax_loss(x, target, 1.3, n_iter=n_iter)
        assert torch.equal(loss, entmax_loss(x, target, 1.3))
        assert torch.equal(EntmaxLoss(1.3, n_iter=n_iter)(x, target), loss)
    assert abs(float(entmax(x, 1.3, n_iter=1).sum(-1).sub(1).abs().max())) <= 1e-15
    package = pytest.importorskip("entmax")  # (what they do there: far off at one step)
    assert float((package.entmax_bisect(x, 1.3, n_iter=1) - entmax(x, 1.3)).abs().max()) > 0.01
    bad = [
        (lambda: sparsemax(x, k=0), ValueError, "k must be None or an int >= 1"),
        (lambda: sparsemax(x, k=2.0), TypeError, "k must be None or an int >= 1"),
        (lambda: entmax(x, 1.5, k=True), TypeError, "k must be"),
        (lambda: entmax(x, 1.3, n_iter=-1), ValueError, "n_iter must be None or an int >= 0"),
        (lambda: entmax(x, 1.3, n_iter="50"), TypeError, "n_iter must be"),
        (lambda: entmax(x, 1.3, ensure_sum_one=1), TypeError, "ensure_sum_one must be a bool"),
        (lambda: entmax_loss(x, target, n_iter=-5), ValueError, "n_iter"),
        (lambda: sparsemax_loss(x, target, k=-1), ValueError, "k must"),
        (lambda: Sparsemax(k=0), ValueError, "k must"),
        (lambda: Entmax(1.3, n_iter=2.5), TypeError, "n_iter must"),
        (lambda: EntmaxLoss(1.5, k=[3]), TypeError, "k must"),
        (lambda: SparsemaxLoss(k=0), ValueError, "k must"),
    ]
    for call, error, message in bad:
        with pytest.raises(error, match=message):
            call()
    with pytest.raises(TypeError):  # keyword-only: the package's sparsemax(X, dim, k)
        sparsemax(x, -1, None, 5)


def test_mask_minus_inf_empty_rows_and_dims():
    gen = torch.Generator().manual_seed(8)
    x = torch.randn(3, 5, 4, generator=gen, dtype=F64)
    mask = torch.rand(3, 5, 4, generator=gen) > 0.3
    mask[0, :, 0] = False  # a fully masked row along dim 1
    for dim in (0, 1, 2, -1):
        p = entmax(x, 1.5, dim=dim, mask=mask)
        assert (p[~mask] == 0).all()
        sums = p.sum(dim)
        valid = mask.any(dim)
        assert (sums[valid] - 1).abs().max() <= 1e-14 and (sums[~valid] == 0).all()
        masked = x.masked_fill(~mask, -math.inf)
        assert (entmax(masked, 1.5, dim=dim) - p).abs().max() <= 1e-15
    xg = x.clone().requires_grad_(True)
    weights = torch.randn(3, 5, 4, generator=gen, dtype=F64)
    (entmax(xg, 1.3, dim=1, mask=mask) * weights).sum().backward()
    assert torch.isfinite(xg.grad).all() and (xg.grad[~mask] == 0).all()
    noncontiguous = x.transpose(0, 2)
    contiguous = noncontiguous.contiguous()
    assert (entmax(noncontiguous, 1.7, dim=1) - entmax(contiguous, 1.7, dim=1)).abs().max() == 0


def test_edges_stay_finite():
    """Constant rows, ties, N = 1, empty batches, a spread of 1e30 in float32, half dtypes."""
    for alpha in (0.6, 1.0, 1.3, 1.5, 2.0, 3.0):
        assert (entmax(torch.zeros(2, 4), alpha) == 0.25).all()
        assert (entmax(torch.ones(3, 1), alpha) == 1).all()
        assert entmax(torch.zeros(0, 5), alpha).shape == (0, 5)
        wide = torch.tensor([[1e30, -1e30, 0.0, 3e29]], requires_grad=True)
        p = entmax(wide, alpha)
        p.sum().backward()
        assert torch.isfinite(p).all() and torch.isfinite(wide.grad).all()
        assert abs(float(p.detach().sum()) - 1) <= 1e-6
        for dtype in (torch.float16, torch.bfloat16):
            half = entmax(torch.randn(4, 9).to(dtype), alpha)
            assert half.dtype == dtype and torch.isfinite(half).all()


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32, F64])
@pytest.mark.parametrize(
    ("shape", "dim", "alpha_shape"),
    [
        ((0, 5), -1, (0, 1)),
        ((0, 5), -1, (1, 1)),
        ((1, 1, 0), -2, (1, 1, 0)),
        ((3, 0, 4), -1, (3, 0, 1)),
    ],
)
def test_empty_batch_with_an_alpha_tensor(dtype, shape, dim, alpha_shape):
    """No rows and alpha a tensor per row (or one broadcast over none): an empty p of x's
    shape and dtype, and empty gradients of x's and alpha's shapes (the alpha groups,
    grouped by the distinct values of no rows, raised an IndexError)."""
    alpha_dtype = F64 if dtype == F64 else torch.float32
    x = torch.zeros(shape, dtype=dtype, requires_grad=True)
    alpha = torch.full(alpha_shape, 1.3, dtype=alpha_dtype, requires_grad=True)
    p = entmax(x, alpha, dim=dim)
    assert p.shape == shape and p.dtype == dtype
    p.sum().backward()
    assert x.grad.shape == shape and alpha.grad.shape == alpha_shape
    assert float(alpha.grad.abs().sum()) == 0.0  # (alpha (1, 1) over no rows: a sum of none)
    rows = torch.zeros(0, 5, dtype=dtype)
    no_alphas = torch.full((0, 1), 1.3, dtype=alpha_dtype)
    loss = entmax_loss(rows, torch.zeros(0, dtype=torch.long), no_alphas)
    assert loss.shape == () and float(loss) == 0.0


@pytest.mark.parametrize("dtype", [torch.float32, F64])
def test_scores_spread_over_the_whole_dtype_range(dtype):
    """Finite scores from -largest to +largest of the dtype: the gaps max - x of the lower
    entries overflow to +inf and the row sums of both signs to NaN (which made the Newton
    loop's start NaN, and p NaN on whole rows at alpha <= 1.3, softmax included; seen on
    float32 rows of 17 and 300 entries). Exact answer: the m ties at the row maximum get
    1/m (every other entry lies at least 1e32 below it: p = 0 for alpha >= 1, below
    1e-60 at 0.5), and dL/dz = (1/m)^(2 - alpha) (g - mean of g over the ties) on them, 0
    elsewhere; within 2 ulps of 1/m and 8 ulps of that gradient's scale, per-row alpha and
    the NumPy face too, and no floating-point warning."""
    big = float(torch.finfo(dtype).max)
    gen = torch.Generator().manual_seed(61)
    rows, size = 6, 300
    x = ((torch.rand(rows, size, generator=gen, dtype=F64) * 2 - 1) * big).to(dtype)
    x[:, size // 2 :] = x[:, size // 2 :].clamp(max=big / 2)
    ties = torch.tensor([[1], [2], [3], [5], [1], [4]], dtype=F64)
    for row, m in enumerate(ties.flatten().int().tolist()):
        x[row, torch.randperm(size, generator=gen)[:m]] = big
    x[4, 7] = -big  # (a row of one maximum and the dtype's lowest)
    top = x == big
    g = torch.randn(rows, size, generator=gen, dtype=dtype)
    eps = float(torch.finfo(dtype).eps)
    values = (0.5, 1.0, 1.3, 1.5, 2.0, 5.0)
    alphas = (*values, torch.tensor(values)[:, None])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for alpha in alphas:
            v = x.clone().requires_grad_()
            a = alpha.to(dtype) if isinstance(alpha, torch.Tensor) else alpha
            p = entmax(v, a)
            (p * g).sum().backward()
            expected = top / ties
            assert (p.double() - expected).abs().max() <= 2 * eps / ties.min()
            row_alpha = a.double() if isinstance(a, torch.Tensor) else torch.tensor(a, dtype=F64)
            mean = (g.double() * top).sum(-1, keepdim=True) / ties
            s = (1 / ties) ** (2 - row_alpha)
            grad = torch.where(top, s * (g.double() - mean), 0.0)
            assert (v.grad.double() - grad).abs().max() <= 8 * eps * (s * g.abs().max()).max()
            if not isinstance(alpha, torch.Tensor):
                q = np_discrete.entmax(x.numpy(), alpha)
                assert np.abs(q - expected.numpy()).max() <= 2 * eps
        assert (np_discrete.softmax(x.numpy()) == entmax(x, 1.0).numpy()).all()
    if dtype == torch.float32:  # compiled (NaN there too before, also at alpha = 2)
        compiled = torch.compile(lambda v, a: entmax(v, a), fullgraph=True)
        p = compiled(x, alphas[-1])
        assert (p.double() - top / ties).abs().max() <= 2 * eps / ties.min()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_tied_levels_far_apart_above_two_raise_no_warning(dtype):
    """Rows on a grid of levels 1.44 apart near -380 (ties at every level; a fuzz of the
    public API found them), at alpha = 10, where 1/(alpha - 1) = 0.11: the m ties at the row
    maximum get exactly 1/m (to the dtype's rounding), the rest 0. A Newton step of
    the loop above 2 evaluated a mass that rounded to 0 at a trial shift, and the
    deformed step that the loop then discards took its log: NumPy's "divide by zero"
    warning reached the user."""
    gen = torch.Generator().manual_seed(14)
    levels = torch.round(torch.randn(7, 1500, generator=gen, dtype=F64) * 2) - 266
    x = (levels * 1.4382888018519588).to(dtype)
    top = (x == x.amax(-1, keepdim=True)).double()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        p = entmax(x, 10.0).double()
    assert (p - top / top.sum(-1, keepdim=True)).abs().max() <= float(torch.finfo(dtype).eps)


def test_bad_input_raises():
    with pytest.raises(ValueError, match="NaN"):
        entmax(torch.tensor([0.0, math.nan]))
    with pytest.raises(ValueError, match="alpha"):
        entmax(torch.zeros(3), 0.0)
    with pytest.raises(ValueError, match="alpha"):
        entmax(torch.zeros(2, 3), torch.tensor([[1.5], [-1.0]]))
    with pytest.raises(ValueError, match="alpha"):
        entmax(torch.zeros(2, 3), torch.ones(3, 1))
    with pytest.raises(TypeError, match=r"x must be a floating-point tensor, got a torch\.int64"):
        entmax(torch.zeros(3, dtype=torch.int64))
    with pytest.raises(TypeError, match="got ndarray"):
        sparsemax(np.zeros(3))
    with pytest.raises(ValueError, match="at least one dimension, got a 0-d tensor"):
        entmax(torch.tensor(1.0), 1.5)
    with pytest.raises(ValueError, match="dim"):
        sparsemax(torch.zeros(3), dim=1)
    with pytest.raises(ValueError, match="reduction"):
        entmax_loss(torch.zeros(2, 3), torch.tensor([0, 1]), reduction="avg")
    with pytest.raises(ValueError, match="target"):
        entmax_loss(torch.zeros(2, 3), torch.tensor([0, 3]))
    for bad in (True, "1.5", None):
        with pytest.raises(TypeError, match="alpha must be a real number"):
            entmax(torch.zeros(3), bad)


def test_integer_and_numpy_alphas_are_numbers():
    """alpha = 2 (an int, as entmax package users write it) or a NumPy scalar is the
    float (an int reached the per-row branch and raised AttributeError)."""
    x = torch.randn(3, 5, generator=torch.Generator().manual_seed(12))
    for alpha in (2, np.int64(3), np.float32(1.5)):
        assert (entmax(x, alpha) - entmax(x, float(alpha))).abs().max() == 0
        assert float(entmax_loss(x, torch.tensor([0, 1, 2]), alpha)) == float(
            entmax_loss(x, torch.tensor([0, 1, 2]), float(alpha))
        )
    assert (Entmax(alpha=2)(x) - sparsemax(x)).abs().max() == 0


@pytest.mark.parametrize("alpha", [1.3, 1.7])
def test_learned_scalar_alpha_takes_the_float_paths(alpha):
    """A learned 0-dim alpha runs the map as its Python float does (on the CPU, long
    rows: the start from each row's largest quarter, s / sum(s) kept on its columns) and
    its gradient on those columns; against one alpha per row (the generated per-row
    kernels, dense) with equal values, summed: float64, dL/dz within 1e-13 and dL/dalpha
    within 1e-12 relative. alpha = 1.3 is also held as a float32 (1.29999995), which
    must take the start as 1.3 does (tuning.PREFIX_ALPHA)."""
    from tsallis.core import discrete as core

    gen = torch.Generator().manual_seed(31)
    x = torch.randn(128, 600, generator=gen, dtype=F64)
    w = torch.randn(128, 600, generator=gen, dtype=F64)
    seen = []
    gradient = core.entmax_alpha_gradient

    def spy(p, grad, a, with_alpha=True, s=None, scale=None):
        seen.append(type(s).__name__)
        return gradient(p, grad, a, with_alpha, s, scale)

    grads = []
    for shape in ((), (128, 1)):
        xg = x.clone().requires_grad_(True)
        a = torch.full(shape, alpha, dtype=F64, requires_grad=True)
        # (the rows' alpha through the array's own loop: not grouped as one float)
        groups = 0 if shape else core.T.ALPHA_GROUPS
        with (
            mock.patch.object(core, "entmax_alpha_gradient", spy),
            mock.patch.object(core.T, "ALPHA_GROUPS", groups),
        ):
            (entmax(xg, a) * w).sum().backward()
        grads.append((xg.grad, a.grad.sum()))
    assert seen == ["ColumnSlopes", "Tensor"]
    (gx, ga), (gx_rows, ga_rows) = grads
    assert (gx - gx_rows).abs().max() <= 1e-13
    assert abs(float(ga - ga_rows)) <= 1e-12 * abs(float(ga_rows))
    if alpha == 1.3:  # float32 1.3 takes the start (its columns) too
        seen.clear()
        xg = x.float().requires_grad_(True)
        a = torch.tensor(alpha, requires_grad=True)
        with mock.patch.object(core, "entmax_alpha_gradient", spy):
            (entmax(xg, a) * w.float()).sum().backward()
        assert seen == ["ColumnSlopes"]
        # against float64 at that alpha: a sum over 128 rows of supports of about 150,
        # with cancellation, in float32 (measured 1.0e-6 relative)
        a64 = torch.tensor(float(a), dtype=F64, requires_grad=True)
        (entmax(x, a64) * w).sum().backward()
        assert abs(float(a.grad) - float(a64.grad)) <= 1e-5 * abs(float(a64.grad))


def test_alpha_partial_on_the_support_is_the_generated_one():
    """The eager CPU backward evaluates the generated dp/dalpha on the support's entries
    alone (Torch's CPU where is slow on random masks): the same values as the whole
    rows, on maps with tiny p at the support's edge, and zeros off it; float64 within 16
    ulps relative. The two take other vectorized loops for some entries (their positions
    in the vectors differ), whose log and expm1 round differently, and the formula's
    log1prel' (y/(1 + y) - log1p(y)) / y^2 amplifies that about 5 times: measured bit for
    bit at 1.3, 1 ulp with one alpha per row, and 6.9 ulps at one entry at 1.7 (p =
    0.54), where each value is within 4.2 ulps of 50-digit mpmath; an entry taken from
    the wrong place would be off by O(1))."""
    from tsallis.core import discrete as core
    from tsallis.core._generated import discrete as gen

    x = torch.randn(64, 1000, generator=torch.Generator().manual_seed(5), dtype=F64)
    for alpha in (1.3, 1.7, torch.linspace(1.1, 1.9, 64, dtype=F64)[:, None]):
        p = entmax(x, alpha)
        assert 0 < float(p[p > 0].min()) < 1e-4  # entries near the edge
        want = gen.entmax_alpha_partial(p, alpha)
        got = core._alpha_partial_on_support(p, alpha)
        assert torch.equal(got == 0, want == 0)
        assert ((got - want).abs() <= 16 * 2**-52 * want.abs()).all()


def test_modules_and_learned_alpha():
    alpha = torch.nn.Parameter(torch.tensor([[1.5]]))
    layer = Entmax(alpha)
    x = torch.randn(4, 6)
    layer(x).pow(2).sum().backward()
    assert alpha.grad is not None and torch.isfinite(alpha.grad).all()
    assert (Sparsemax()(x) - sparsemax(x)).abs().max() == 0
    # a scalar (0-dim) learned alpha and a (1,) alpha: gradients of their own shapes
    x64 = torch.randn(4, 6, dtype=F64, generator=torch.Generator().manual_seed(9))
    # (one value for every row: the map takes the float's paths, sort-based at 3/2 and 2)
    for shape, value in (((), 1.7), ((1,), 1.7), ((), 1.5), ((1,), 2.0), ((), 2.5)):
        scalar = torch.full(shape, value, dtype=F64, requires_grad=True)
        assert torch.autograd.gradcheck(lambda v, a: entmax(v, a), (x64.requires_grad_(), scalar))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(-50, 50), min_size=1, max_size=12),
    st.sampled_from([0.7, 1.0, 1.2, 1.5, 2.0, 2.7]),
    st.floats(-1e3, 1e3),
)
def test_properties(values, alpha, shift):
    x = torch.tensor(values, dtype=F64)
    p = entmax(x, alpha)
    assert (p >= 0).all() and abs(float(p.sum()) - 1) <= 1e-12
    assert (entmax(x + shift, alpha) - p).abs().max() <= 1e-9
    order = torch.randperm(x.numel(), generator=torch.Generator().manual_seed(0))
    assert (entmax(x[order], alpha) - p[order]).abs().max() <= 1e-12
    if alpha >= 1:  # support shrinks as alpha grows (softmax is dense)
        assert ((entmax(x, alpha + 0.3) > 0) <= (p > 0)).all()


@settings(max_examples=40, deadline=None)
@given(
    values=st.lists(st.floats(-5, 5), min_size=1, max_size=20),
    dropped=st.lists(st.booleans(), min_size=20, max_size=20),
    scale=st.sampled_from([1e-6, 1.0, 30.0]),
    shift=st.sampled_from([0.0, 1e3]),
    alpha=st.sampled_from([0.5, 1.0, 1.0001, 1.3, 1.5, 2.0, 2.5, 5.0]),
    dtype=st.sampled_from([torch.float32, F64]),
    dim=st.sampled_from([0, 1]),
)
def test_public_api_fuzzed_against_mpmath(values, dropped, scale, shift, alpha, dtype, dim):
    """Rows of tiny, unit and wide spread, shifted by 1e3, with -inf entries, in float32
    and float64, along either axis, at alphas from 0.5 to 5: every probability within
    the issue's bars of the 40-digit oracle on the very (rounded) input, 1e-12 in
    float64 and 1e-6 in float32."""
    row = torch.tensor(values, dtype=F64) * scale + shift
    row[torch.tensor(dropped[: len(values)])] = -math.inf
    row[int(torch.tensor(values).argmax())] = shift + max(values) * scale  # one finite
    x = torch.stack([row, row.flip(0)]).to(dtype)
    p = entmax(x if dim == 1 else x.T, alpha, dim=dim)
    p = (p if dim == 1 else p.T).double()
    bar = 1e-12 if dtype == F64 else 1e-6
    for got, given_row in zip(p, x.double(), strict=True):
        assert (got - torch.from_numpy(_exact(given_row.numpy(), alpha))).abs().max() <= bar


@settings(max_examples=100, deadline=None)
@example(values=[0.0, -2.4], alpha=1.5, device=False)  # tau_2 uncapped: -0.974 > tau = -1
@example(values=[0.0, -2.4, 0.5, -2.4], alpha=1.5, device=True)
@given(
    values=st.lists(
        st.one_of(st.sampled_from([-2.0, -1.0, -0.5, 0.0, 0.5, 1.0]), st.floats(-3, 3)),
        min_size=1,
        max_size=12,
    ),
    alpha=st.sampled_from([1.5, 2.0]),
    device=st.booleans(),
)
def test_sorted_threshold_is_exact_on_ties_and_edges(values, alpha, device):
    """The sort-based threshold, the largest min(tau_k, u_k) over the prefixes (one
    reduction), on rows drawn partly from a grid (ties, entries exactly at the threshold:
    sparsemax of [1, 0, 0] puts two there) and on the NumPy view or the Torch path a GPU
    runs: float64 within 1e-12 of 40-digit mpmath."""
    from array_api_compat import is_torch_array

    from tsallis.core import discrete as core

    row = np.array(values)
    forced = (lambda z: not is_torch_array(z)) if device else core._eager_cpu
    viewable = (lambda z: False) if device else core._numpy_viewable
    with (
        mock.patch.object(core, "_eager_cpu", forced),
        mock.patch.object(core, "_numpy_viewable", viewable),
    ):
        p = entmax(torch.tensor(row, dtype=F64), alpha).numpy()
    assert np.abs(p - _exact(row, alpha)).max() <= 1e-12


def test_compiles_without_graph_breaks():
    compiled = torch.compile(lambda v: entmax(v, 1.3) + sparsemax(v), fullgraph=True)
    x = torch.randn(8, 20)
    assert (compiled(x) - (entmax(x, 1.3) + sparsemax(x))).abs().max() <= 1e-6
    alpha, target = torch.full((8, 1), 1.4), torch.randint(0, 20, (8,))
    per_row = torch.compile(lambda v, a: entmax(v, a), fullgraph=True)
    assert (per_row(x, alpha) - entmax(x, alpha)).abs().max() <= 1e-6
    loss = torch.compile(lambda v: entmax_loss(v, target, 1.5), fullgraph=True)
    assert abs(float(loss(x) - entmax_loss(x, target, 1.5))) <= 1e-6


def test_compiled_above_two_matches_eager():
    """Under torch.compile the refinement above 2 has no host reads: it took 16 fixed
    steps, and rows whose root sits next to an entry's edge (closed on by bisection) were
    left 5e-3 off at alpha = 10 (float64 N(0, 1) rows of 1000). It now runs as a
    while_loop of up to 64 steps that stops on the device once every row is done
    (core.discrete._refined_above_two): p within 1e-15 of eager at 10 and for an alpha
    per row from 2.5 to 10, dL/dz within 1e-12 of eager's largest (fullgraph)."""
    torch._dynamo.reset()
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(64, 1000, generator=gen, dtype=F64)
    w = torch.randn(64, 1000, generator=gen, dtype=F64)
    per_row = torch.linspace(2.5, 10.0, 64, dtype=F64)[:, None]
    for alpha in (10.0, per_row):
        v, u = x.clone().requires_grad_(), x.clone().requires_grad_()
        got = torch.compile(lambda v, a=alpha: entmax(v, a), fullgraph=True)(v)
        want = entmax(u, alpha)
        (got * w).sum().backward()
        (want * w).sum().backward()
        assert (got - want).abs().max() <= 1e-15
        assert (v.grad - u.grad).abs().max() <= 1e-12 * u.grad.abs().max()
    # an alpha per row on both sides of 2 (those at or below 2 skip the compiled anchor),
    # and far above it, where it changes p by up to 0.3 (a p of 0.008 at 100)
    mixed = torch.tensor([0.5, 1.0, 1.5, 2.0, 3.0, 10.0, 30.0, 100.0] * 25, dtype=F64)[:, None]
    small = torch.randn(200, 8, generator=gen, dtype=F64)
    got = torch.compile(lambda v: entmax(v, mixed), fullgraph=True)(small)
    assert (got - entmax(small, mixed)).abs().max() <= 1e-15


def test_compiles_with_dynamic_true():
    """torch.compile(dynamic=True) makes every float Dynamo reads symbolic, the core's
    module constants included (exprel's series, the exp flush limit), and while_loop
    refuses symbolic floats among what its body captures: every float alpha but 2 failed
    to trace ("can only be of Tensor, int, SymInt"). The core now reads them through
    arrays.constant, a constant of the trace. Two shapes, one graph; forward and the
    gradient within 1e-6 of eager (float32). aot_eager: the failure was in tracing."""
    torch._dynamo.reset()
    gen = torch.Generator().manual_seed(21)
    weight = torch.randn(40, generator=gen)

    def objective(v, a, target):
        maps = entmax(v, 1.3) + entmax(v, a)
        return (maps * weight[: v.shape[-1]]).sum() + entmax_loss(v, target, 1.5)

    compiled = torch.compile(objective, fullgraph=True, dynamic=True, backend="aot_eager")
    for rows, size in ((8, 20), (5, 33)):
        x = torch.randn(rows, size, generator=gen).requires_grad_(True)
        alpha = torch.linspace(1.1, 1.9, rows)[:, None]
        target = torch.randint(0, size, (rows,), generator=gen)
        got = compiled(x, alpha, target)
        (grad,) = torch.autograd.grad(got, x)
        want = objective(x, alpha, target)
        (want_grad,) = torch.autograd.grad(want, x)
        assert abs(float(got - want)) <= 1e-6 * max(1.0, abs(float(want)))
        assert (grad - want_grad).abs().max() <= 1e-6


_COMPILED_TRAINING_STEP = """
import torch
from torch_bridge import entmax, sparsemax, sparsemax_loss

gen = torch.Generator().manual_seed(13)
x = torch.randn(16, 50, generator=gen).requires_grad_(True)
w, target = torch.randn(16, 50, generator=gen), torch.randint(0, 50, (16,), generator=gen)
alpha = torch.linspace(1.1, 1.9, 16)[:, None].requires_grad_(True)


def objective(v, a):
    maps = entmax(v, 1.3) + entmax(v, 1.0) + entmax(v, a) + sparsemax(v)
    return (maps * w).sum() + sparsemax_loss(v, target)


torch.compile(objective, fullgraph=True)(x, alpha).backward()
compiled = x.grad.clone(), alpha.grad.clone()
x.grad = alpha.grad = None
objective(x, alpha).backward()
print(float((compiled[0] - x.grad).abs().max()))
print(float((compiled[1] - alpha.grad).abs().max() / alpha.grad.abs().max()))
"""


def test_compiled_backward_matches_eager():
    """Training under torch.compile(fullgraph=True), in a fresh interpreter: gradients
    in x and in a per-row alpha within 1e-6 of eager (float32). Before: the traced
    Function raised InternalTorchDynamoError (s aliased the loop's buffers), a per-row
    alpha made GCC 12 fail on the 64 unrolled steps, and alpha = 1 and per-row gradients
    were NaN in the first version of the device-side loop. scale aliased the loop's
    state too and raised the same error, but only in a fresh process (after the other
    compile tests of this file it passed, Dynamo reset or not): hence the subprocess."""
    import subprocess
    import sys

    run = subprocess.run(
        [sys.executable, "-c", _COMPILED_TRAINING_STEP], capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr[-2000:]
    grad_x, grad_alpha = (float(v) for v in run.stdout.split())
    assert grad_x <= 1e-6 and grad_alpha <= 1e-6


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda_matches_cpu():
    """float32 on CUDA (fixed 64 Newton steps, no host reads) within 1e-6 of float64 on
    CPU, gradients included."""
    x = torch.randn(64, 300, generator=torch.Generator().manual_seed(10))
    w = torch.randn(64, 300, generator=torch.Generator().manual_seed(11))
    for alpha in (1.0, 1.3, 1.5, 2.0, 3.0):
        gpu = x.cuda().requires_grad_()
        (entmax(gpu, alpha) * w.cuda()).sum().backward()
        cpu = x.double().requires_grad_()
        p = entmax(cpu, alpha)
        (p * w.double()).sum().backward()
        assert (entmax(gpu.detach(), alpha).cpu().double() - p).abs().max() <= 1e-6
        assert (gpu.grad.cpu().double() - cpu.grad).abs().max() <= 1e-5 * w.abs().max()


def _on_cuda_and_in_float64(op, *tensors):
    """op on CUDA in float32 and on the CPU in float64, both on the tensors rounded to
    float32 (at alpha = 5, dp/dz = p^-3 turns the input's rounding alone into 3e-6): the
    outputs and the gradients of (out * w).sum() in every tensor that requires grad."""
    tensors = [
        t.detach().float().double().requires_grad_(t.requires_grad) if t.is_floating_point() else t
        for t in tensors
    ]
    results = []
    for device, dtype in (("cuda", torch.float32), ("cpu", F64)):
        args = [
            t.to(device, dtype if t.is_floating_point() else t.dtype)
            .detach()
            .requires_grad_(t.requires_grad)
            for t in tensors
        ]
        out = op(*args)
        w = torch.randn(out.shape, generator=torch.Generator().manual_seed(3), dtype=F64)
        (out * w.to(device, out.dtype)).sum().backward()
        grads = [a.grad.cpu().double() for a in args if a.requires_grad]
        results.append((out.detach().cpu().double(), grads, w))
    return results


_CUDA_CASES = {
    # (1024, 1000) at N(0, 1) and (8, 50257) at N(0, 9): the eager loop's largest-quarter
    # start (topk on CUDA) and its rows finished apart
    "sparsemax": lambda x: sparsemax(x),
    "entmax 1.3": lambda x: entmax(x, 1.3),
    "entmax 1.5": lambda x: entmax(x, 1.5),
    "entmax 1.0001": lambda x: entmax(x, 1.0001),
    "entmax 0.7": lambda x: entmax(x, 0.7),
    "entmax 5": lambda x: entmax(x, 5.0),
    "entmax dim 0 with mask": lambda x: entmax(x.T, 1.3, dim=0, mask=(x.T > -2)),
    "entmax_loss 1.3": lambda x: entmax_loss(
        x, torch.arange(x.shape[0], device=x.device) % x.shape[1], 1.3, reduction="none"
    ),
    "sparsemax_loss": lambda x: sparsemax_loss(
        x, torch.arange(x.shape[0], device=x.device) % x.shape[1], reduction="none"
    ),
}


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
@pytest.mark.parametrize("shape", [(1024, 1000), (8, 50257)])
@pytest.mark.parametrize("case", list(_CUDA_CASES))
def test_cuda_float32_matches_float64_on_cpu(case, shape):
    """float32 on CUDA within 1e-6 of float64 on the CPU (probabilities; losses relative
    to their size), the gradient of (out * w).sum() within 1e-5 * max|w| (float32's
    rounding of p^(2-alpha)-weighted sums of w); rows drawn as N(0, 9)."""
    gen = torch.Generator().manual_seed(20)
    x = (torch.randn(shape, generator=gen, dtype=F64) * 3).requires_grad_(True)
    (gpu, (gpu_grad,), w), (cpu, (cpu_grad,), _) = _on_cuda_and_in_float64(_CUDA_CASES[case], x)
    assert (gpu - cpu).abs().max() <= 1e-6 * max(1.0, float(cpu.abs().max()))
    assert (gpu_grad - cpu_grad).abs().max() <= 1e-5 * float(w.abs().max())


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda_per_row_alpha_half_dtypes_empty_and_compiled():
    """On CUDA: a learned per-row alpha (gradients in x and alpha against float64 on the
    CPU, 1e-5 relative), bfloat16 / float16 input (computed in float32: within one
    half-precision rounding, 2^-8 for bfloat16, of float32's p), batch 0 and a fully
    masked row, and torch.compile(fullgraph=True) within 1e-6 of eager."""
    gen = torch.Generator().manual_seed(21)
    x = (torch.randn(256, 300, generator=gen, dtype=F64) * 3).requires_grad_(True)
    alpha = torch.linspace(1.05, 2.5, 256, dtype=F64)[:, None].requires_grad_(True)
    (gpu, gpu_grads, w), (cpu, cpu_grads, _) = _on_cuda_and_in_float64(entmax, x, alpha)
    assert (gpu - cpu).abs().max() <= 1e-6
    for got, want in zip(gpu_grads, cpu_grads, strict=True):
        assert (got - want).abs().max() <= 1e-5 * float(want.abs().max()) * float(w.abs().max())
    single = x.detach().float().cuda()
    for dtype, rounding in ((torch.bfloat16, 2.0**-8), (torch.float16, 2.0**-11)):
        half = single.to(dtype)
        for a in (1.3, 1.5, 2.0):
            p = entmax(half, a)
            want = entmax(half.float(), a)
            assert p.dtype == dtype and (p.float() - want).abs().max() <= rounding
    assert entmax(single[:0], 1.3).shape == (0, 300)
    mask = torch.ones_like(single, dtype=torch.bool)
    mask[3] = False
    p = entmax(single, 1.3, mask=mask)
    assert (p[3] == 0).all() and (p[4].sum() - 1).abs() <= 1e-6
    compiled = torch.compile(lambda v: entmax(v, 1.3) + sparsemax(v), fullgraph=True)
    eager = entmax(single, 1.3) + sparsemax(single)
    assert (compiled(single) - eager).abs().max() <= 1e-6


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
@pytest.mark.parametrize("alpha", [2.0, 1.5])
def test_cuda_sorted_maps_check_their_input(alpha):
    """On CUDA (the sort-based maps at alpha = 2 and 3/2): NaN and +inf raise ValueError,
    a row of -inf (no mask) gives zeros and the other rows the CPU's map (float32, 1e-6),
    with or without a gradient. (A check read after the map instead of before it, to
    save its wait for the device, was slower on an H200: 1.07 -> 1.18 ms sparsemax.)"""
    gen = torch.Generator().manual_seed(23)
    x = torch.randn(16, 300, generator=gen) * 3
    for bad in (float("nan"), float("inf")):
        y = x.clone()
        y[5, 7] = bad
        with pytest.raises(ValueError, match="NaN"):
            entmax(y.cuda(), alpha)
        with pytest.raises(ValueError, match="NaN"):
            entmax(y.cuda().requires_grad_(), alpha)
    y = x.clone()
    y[3] = float("-inf")
    want = entmax(y.double(), alpha)
    for grad in (False, True):
        got = entmax(y.cuda().requires_grad_(grad), alpha).detach().cpu().double()
        assert float(got[3].abs().max()) == 0
        assert float((got - want).abs().max()) <= 1e-6
    got = entmax(x.cuda(), alpha).cpu().double()
    assert float((got - entmax(x.double(), alpha)).abs().max()) <= 1e-6


@pytest.mark.parametrize(
    "alpha", [0.7, 1.0001, 1.1, 1.26, 1.3, 1.45, 1.5, 1.7, 2.0, 3.0, "per row"]
)
def test_gpu_paths_on_the_cpu(alpha, monkeypatch):
    """Every alpha through the paths a GPU takes, forced on the CPU: tensors treated as
    off the CPU (_eager_cpu, _numpy_viewable), per-row values by copies, the sort-based
    maps at any size, and no NumPy view of a tensor (_view raises, as a CUDA tensor's
    .numpy() does: at alpha = 1.0001 the narrowing viewed one on an H200). p and the
    gradient of (p * w).sum() match the CPU's paths: float32 within 1e-6 (p) and 1e-5
    max|w| (gradient), float64 within 1e-12 and 1e-10; also along dim 0 with a mask."""
    from array_api_compat import is_torch_array

    from tsallis.core import discrete as core

    gen = torch.Generator().manual_seed(31)
    # (72, 1000): at least tuning.COMPACT_ELEMENTS values, so that the narrowing and the
    # rows finished apart are considered
    x = torch.randn(72, 1000, generator=gen, dtype=F64) * 3
    x[1, :4] = x[1].max()  # ties at the top
    x[2, ::2] = float("-inf")
    w = torch.randn(72, 1000, generator=gen, dtype=F64)
    mask = torch.rand(72, 1000, generator=gen) > 0.2
    a = torch.linspace(0.8, 2.6, 72, dtype=F64)[:, None] if alpha == "per row" else alpha

    def run(dtype):
        out = []
        for dim, m in ((-1, None), (0, mask.T)):
            v = (x if dim == -1 else x.T).to(dtype).clone().requires_grad_(True)
            av = a if isinstance(a, float) else (a if dim == -1 else a.T).to(dtype)
            p = entmax(v, av, dim=dim, mask=m)
            (p * (w if dim == -1 else w.T).to(dtype)).sum().backward()
            out.append((p.detach().double(), v.grad.double()))
        return out

    expected = {dtype: run(dtype) for dtype in (torch.float32, F64)}
    view = core._view

    def no_tensor_views(z):
        if is_torch_array(z):
            raise TypeError("a GPU tensor has no NumPy view")
        return view(z)

    monkeypatch.setattr(core, "_eager_cpu", lambda z: not is_torch_array(z))
    monkeypatch.setattr(core, "_numpy_viewable", lambda z: False)
    monkeypatch.setattr(core, "_BOOKKEEPING_VIEWS", ())
    monkeypatch.setattr(core, "_view", no_tensor_views)
    monkeypatch.setattr(core.T, "SORT_ELEMENTS", {k: 2**40 for k in core.T.SORT_ELEMENTS})
    for dtype, tol_p, tol_g in ((torch.float32, 1e-6, 1e-5), (F64, 1e-12, 1e-10)):
        for (p, g), (p0, g0) in zip(run(dtype), expected[dtype], strict=True):
            assert float((p - p0).abs().max()) <= tol_p, (alpha, dtype)
            assert float((g - g0).abs().max()) <= tol_g * float(w.abs().max()), (alpha, dtype)


@pytest.mark.parametrize(
    "values", [(1.3,), (1.1, 1.5, 2.0, 1.0), (0.7, 1.3, 2.5, 4.0), (1.2, 1.2001, 1.9)]
)
@pytest.mark.parametrize("dtype", [torch.float32, F64])
def test_alpha_groups_match_the_array_loop(values, dtype, monkeypatch):
    """An alpha tensor with few distinct values (one per head: (1, H, 1) against (B, H,
    K) scores, along dim -1 and, transposed, dim 0 with a mask) is solved as Python
    floats on each value's rows: p, the gradients in x and in alpha as the array's own
    loop gives them (tuning.ALPHA_GROUPS = 0): float32 within 1e-6 (p) and 1e-5 x
    max|w|, float64 1e-12 and 1e-10 (gradients in alpha relative to their size); and
    the grouping ran (entmax_map called once per value)."""
    from tsallis.core import discrete as core
    from tsallis.core import tuning

    gen = torch.Generator().manual_seed(41)
    heads = 4
    x = (torch.randn(6, heads, 300, generator=gen, dtype=F64) * 2).to(dtype)
    x[0, 1, ::3] = float("-inf")
    w = torch.randn(6, heads, 300, generator=gen, dtype=F64).to(dtype)
    mask = torch.rand(6, heads, 300, generator=gen) > 0.1
    alpha = torch.tensor(values, dtype=dtype)[torch.arange(heads) % len(values)]

    def run():
        out = []
        for dim, m in ((-1, None), (0, mask)):
            v = (x if dim == -1 else x.movedim(-1, 0)).clone().requires_grad_(True)
            a = alpha.reshape(1, heads, 1) if dim == -1 else alpha.reshape(1, 1, heads)
            a = a.clone().requires_grad_(True)
            mm = None if m is None else m.movedim(-1, 0)
            p = entmax(v, a, dim=dim, mask=mm)
            (p * (w if dim == -1 else w.movedim(-1, 0))).sum().backward()
            out += [p.detach(), v.grad, a.grad]
        return out

    calls = []
    entmax_map = core.entmax_map

    def counted(z, alpha, *args, **kwargs):
        calls.append(alpha)
        return entmax_map(z, alpha, *args, **kwargs)

    monkeypatch.setattr(core, "entmax_map", counted)
    grouped = run()
    assert sum(isinstance(a, float) for a in calls) == 2 * len(set(values))
    monkeypatch.setattr(tuning, "ALPHA_GROUPS", 0)
    calls.clear()
    looped = run()
    assert not any(isinstance(a, float) for a in calls)
    tol_p, tol_g = (1e-6, 1e-5) if dtype == torch.float32 else (1e-12, 1e-10)
    for index, (g, o) in enumerate(zip(grouped, looped, strict=True)):
        error = float((g - o).abs().max())
        if index % 3 == 0:
            assert error <= tol_p, (index, error)
        elif index % 3 == 1:
            assert error <= tol_g * float(w.abs().max()), (index, error)
        else:
            assert error <= tol_g * max(float(o.abs().max()), 1.0), (index, error)


def test_many_alphas_on_both_sides_of_two_split(monkeypatch):
    """An alpha per row with more distinct values than tuning.ALPHA_GROUPS, on both sides
    of 2 (float64 (256, 800), -inf entries; the rows above 2 hold more than
    tuning.COMPACT_ELEMENTS values): the rows above 2 are solved apart (their
    loop packs the entries near each row's maximum), and p, dL/dx and dL/dalpha match
    each row solved alone at its alpha as a learned scalar (the float paths): 1e-12,
    1e-10 and 1e-9 relative."""
    from tsallis.core import discrete as core

    gen = torch.Generator().manual_seed(43)
    x = torch.randn(256, 800, generator=gen, dtype=F64) * 2
    x[5, ::3] = float("-inf")
    w = torch.randn(256, 800, generator=gen, dtype=F64)
    alpha = torch.linspace(0.8, 2.6, 256, dtype=F64)[:, None]
    packed = []
    support = core._above_two_support

    def spy(z, a, *args):
        applies = support(z, a, *args)
        packed.append(applies and not isinstance(a, float))
        return applies

    monkeypatch.setattr(core, "_above_two_support", spy)
    xg, ag = x.clone().requires_grad_(True), alpha.clone().requires_grad_(True)
    p = entmax(xg, ag)
    (p * w).sum().backward()
    assert any(packed)  # (the rows above 2, packed with their own alphas)
    for row in range(256):
        xr = x[row : row + 1].clone().requires_grad_(True)
        ar = alpha[row, 0].clone().requires_grad_(True)
        pr = entmax(xr, ar)
        (pr * w[row : row + 1]).sum().backward()
        assert float((pr - p[row]).abs().max()) <= 1e-12, row
        assert float((xr.grad - xg.grad[row]).abs().max()) <= 1e-10 * float(w.abs().max())
        assert abs(float(ar.grad - ag.grad[row, 0])) <= 1e-9 * max(abs(float(ar.grad)), 1.0)


def test_bookkeeping_by_copies_as_on_a_gpu(monkeypatch):
    """Off the CPU the eager loop keeps its per-row scalars in NumPy copies (moved to the
    device and back each step), where the CPU uses views: the same NumPy arithmetic, so
    on the CPU, forced through the copies, every map and gradient is bitwise the same
    (float32; a per-row alpha with rows above 2, a mask, the largest-quarter start)."""
    from tsallis.core import discrete as core

    gen = torch.Generator().manual_seed(22)
    x = torch.randn(64, 1000, generator=gen) * 3
    w = torch.randn(64, 1000, generator=gen)
    mask = torch.rand(64, 1000, generator=gen) > 0.1
    alphas = (1.1, 1.3, 1.7, 2.0, 3.0, torch.linspace(1.05, 2.9, 64)[:, None])

    def maps_and_gradients() -> list[torch.Tensor]:
        out = []
        for alpha in alphas:
            v = x.clone().requires_grad_(True)
            p = entmax(v, alpha, mask=mask)
            (p * w).sum().backward()
            out += [p.detach(), v.grad]
        return out

    views = maps_and_gradients()
    monkeypatch.setattr(core, "_BOOKKEEPING_VIEWS", ())
    copies = maps_and_gradients()
    assert max(float((a - b).abs().max()) for a, b in zip(views, copies, strict=True)) == 0


def test_narrowing_stays_on_the_cpu():
    """The loop's narrowing views z in NumPy, so it applies to CPU tensors alone: a tensor
    on another device (meta here; on CUDA, alpha = 1.0001 raised a TypeError from the
    view) with the same shape and state form is not narrowed."""
    from types import SimpleNamespace

    from tsallis.core import discrete as core

    work = SimpleNamespace(incremental=True, form="offset")
    cpu = torch.zeros(1024, 1000)
    assert core._narrowing_applies(cpu, 1.0001, work, 64)
    assert not core._narrowing_applies(cpu.to("meta"), 1.0001, work, 64)


def test_opaque_row_sums_trace_and_match(monkeypatch):
    """Under torch.compile off the CPU the core's row sums go through the custom op
    tsallis::row_sum (Inductor fused them into Triton reductions that Triton 3.6 failed
    to compile). Forced on the CPU: the traced graphs (the while loop's body included)
    call it, and the compiled maps are within 1e-6 of eager (float32)."""
    from tsallis.core import arrays

    graphs = []

    def recording(gm: torch.fx.GraphModule, inputs: list) -> object:
        graphs.extend(str(module.graph) for module in gm.modules() if hasattr(module, "graph"))
        return gm.forward

    monkeypatch.setattr(arrays, "HOST_DEVICES", ())
    torch._dynamo.reset()
    x = torch.randn(8, 20, generator=torch.Generator().manual_seed(23))
    compiled = torch.compile(
        lambda v: entmax(v, 1.3) + sparsemax(v), fullgraph=True, backend=recording
    )
    got = compiled(x)
    torch._dynamo.reset()
    assert sum(graph.count("tsallis.row_sum") for graph in graphs) >= 4
    assert (got - (entmax(x, 1.3) + sparsemax(x))).abs().max() <= 1e-6


def test_docstring_examples_hold():
    import doctest
    import importlib

    # (torch_bridge.entmax the attribute is the function; the module is in sys.modules)
    ops = importlib.import_module("torch_bridge.entmax")
    from tsallis.core import discrete as core

    for module in (ops, core):
        result = doctest.testmod(module)
        assert result.attempted > 0 and result.failed == 0, module.__name__


@pytest.mark.parametrize("alpha", [0.7, 1.1, 1.3, 1.7])
def test_float32_mass_has_no_subnormal_values(alpha):
    """p and s are 0 or normal numbers (subnormal operands cost microcode assists): below
    alpha - 1 = 24 ln 2 / 80 the exp2 passes flush, above it (1 + x)^(1 / (alpha - 1)) >=
    (eps / 2)^(1 / (alpha - 1)) is normal. Scores whose p would span e^-110 to e^-60."""
    from tsallis.core import discrete as core

    log_p = torch.linspace(-110.0, -60.0, 63, dtype=F64)
    z = torch.zeros(1, 64)
    z[0, 1:] = (torch.exp(log_p * (alpha - 1)) - 1) / (alpha - 1)  # p = (1 + (alpha-1) z)^k
    work = core._Buffers(z, z.amax(-1, keepdim=True), alpha)
    core._mass(torch.zeros(1, 1), alpha, work, bend=alpha <= 1.5)
    tiny = torch.finfo(torch.float32).tiny
    for values in (work.p, work.s):
        assert bool(((values == 0) | (values >= tiny)).all())


@pytest.mark.parametrize("alpha", [0.7, 1.0, 1.05, 1.2, 1.3, 1.5, 1.9, 2.0, 3.0])
def test_in_place_mass_equals_the_generated_deformed_exponential(alpha, monkeypatch):
    """The Newton step's in-place p = exp_{2-alpha}(f) and s = p^(2-alpha) (hand-vectorized
    for speed: fused out= passes, on the state moved to c in place or formed anew, or as
    one stacked power as on a GPU) against the generated kernels, for a Python-float
    alpha and for the per-row (array) path that calls them; float64: the sums within
    1e-13, the normalized p within 1e-14 and s within 1e-13 relative to its largest."""
    from tsallis.core import discrete as core
    from tsallis.core._generated import deformed

    gen = torch.Generator().manual_seed(12)
    z = torch.randn(6, 40, generator=gen, dtype=F64) * 2
    z[0, :5] = -math.inf
    top = z.amax(-1, keepdim=True)
    # below 1 / (alpha - 1) (= 0.5 at alpha = 3): the maximum stays in the support, so
    # every row has a mass to normalize by
    c = 0.4 * torch.rand(6, 1, generator=gen, dtype=F64)
    f = (z - top) - c
    finite = f > -math.inf
    log_p = deformed.log_exp_beta(torch.where(finite, f, 0.0), 2 - alpha)
    expected = torch.where(finite, log_p, -math.inf).exp()
    mass = expected.sum(-1, keepdim=True)
    normalized = expected / mass
    stacked_seen = False
    for a in (alpha, torch.full((6, 1), alpha, dtype=F64)):
        form = core._clamped_form(a)
        # in place from a lower c (c / 2 first), as the eager loop does; formed anew; and
        # as on a GPU (the stacked powers where the form is "base", else in place)
        for mode in ("in place", "anew", "device"):
            incremental = mode != "anew"
            monkeypatch.setattr(core, "_eager_cpu", lambda v, on=mode != "device": on)
            # the per-row values in NumPy (incremental) or in Torch
            book = c.numpy() if incremental else c
            to_work = torch.from_numpy if incremental else (lambda v: v)
            to_book = (lambda v: v.numpy()) if incremental else (lambda v: v)
            work = core._Buffers(z, top, a, incremental, to_work, form)
            stacked_seen |= work.stacked
            if work.incremental or work.stacked:
                core._evaluate(book / 2, a, work, False, to_work, to_book)
            total, slope, _ = core._evaluate(book, a, work, False, to_work, to_book)
            book_alpha = a if isinstance(a, float) or not incremental else a.numpy()
            p, s, _ = work.normalized(book_alpha, total, True, slope)
            assert (torch.as_tensor(total) - mass).abs().max() <= 1e-13
            assert (p - normalized).abs().max() <= 1e-14
            want_s = core.gppr_weights(normalized, alpha)
            assert (s - want_s).abs().max() <= 1e-13 * max(1.0, float(want_s.abs().max()))
            # "unit" (entmax_map): s / sum(s) and sum(s), from the same evaluation
            for last in (False, True):  # p in s's buffer, or apart (work.final)
                work = core._Buffers(z, top, a, incremental, to_work, form)
                work.final = last
                core._evaluate(book, a, work, False, to_work, to_book)
                p, unit, scale = work.normalized(book_alpha, total, "unit", slope)
                want_scale = want_s.sum(-1, keepdim=True)
                assert (p - normalized).abs().max() <= 1e-14
                assert ((scale - want_scale).abs() / want_scale).max() <= 1e-13
                assert (unit - want_s / want_scale).abs().max() <= 1e-14
            # the slope: sum s before normalization, s of the normalized map times
            # total^(2 - alpha)
            unnormalized = want_s.sum(-1, keepdim=True) * mass ** (2 - alpha)
            slope = torch.as_tensor(slope)
            assert ((slope - unnormalized).abs() / unnormalized).max() <= 1e-12
        monkeypatch.setattr(core, "_eager_cpu", lambda v: True)
        if form is not None:  # back to a lower c: y formed from z again, nothing lost
            book = lambda v: v.numpy()  # noqa: E731
            work = core._Buffers(z, top, a, True, torch.from_numpy, form)
            core._evaluate(c.numpy(), a, work, False, torch.from_numpy, book)
            lower, _, _ = core._evaluate(c.numpy() / 2, a, work, False, torch.from_numpy, book)
            fresh = core._Buffers(z, top, a, False, lambda v: v, form)
            want, _, _ = core._evaluate(c / 2, a, fresh, False, lambda v: v, lambda v: v)
            assert (torch.as_tensor(lower) - want).abs().max() <= 1e-13
    assert stacked_seen == (core._clamped_form(alpha) == "base")
    if alpha != 1.0 and alpha <= 1.5:  # the Halley steps' sum of t = p^(3 - 2 alpha)
        t = torch.where(expected > 0, expected ** (3 - 2 * alpha), 0.0).sum(-1, keepdim=True)
        for device in (False, True):  # (stacked on a GPU where the form is "base")
            monkeypatch.setattr(core, "_eager_cpu", lambda v, on=not device: on)
            to_work = torch.from_numpy if device else (lambda v: v)
            to_book = (lambda v: v.numpy()) if device else (lambda v: v)
            work = core._Buffers(z, top, alpha, device, to_work, core._clamped_form(alpha))
            book = c.numpy() if device else c
            _, _, bent = core._evaluate(book, alpha, work, True, to_work, to_book)
            assert ((torch.as_tensor(bent) - t).abs() / t).max() <= 1e-13


@settings(max_examples=80, deadline=None)
@given(
    values=st.lists(
        st.floats(-30.0, 30.0, allow_nan=False, allow_subnormal=False), min_size=1, max_size=40
    ),
    alpha=st.sampled_from([0.3, 0.7, 1.0, 1.0001, 1.3, 1.5, 1.9, 2.0, 2.5]),
    masked=st.booleans(),
)
def test_mean_start_is_a_lower_bound_of_the_shift(values, alpha, masked):
    """The Newton loop's first shift (Jensen's inequality for the convex exp_{2-alpha},
    alpha <= 2) leaves a mass of at least 1 (float64: within 1e-12), so the iterates
    still rise from it; a row with a -inf entry, and alpha > 2, start at 0. The mass is
    summed here from the typed deformed exponential (an independent oracle)."""
    from tsallis.core import discrete as core

    z = np.array([values])
    if masked and z.shape[-1] > 1:
        z[0, 0] = -np.inf
    top = z.max(-1, keepdims=True)
    lo = np.zeros_like(top)
    size = z.shape[-1]
    hi = lo + (1 - size ** (1 - alpha)) / (alpha - 1) if alpha != 1 else lo + math.log(size)
    c = core._mean_start(z, top, lo, hi, alpha, lambda t: t)
    u = z[0] - top[0, 0] - c[0, 0]
    if alpha == 1:
        mass = np.exp(u).sum()
    else:
        base = np.maximum(1 + (alpha - 1) * u, 0.0)
        with np.errstate(divide="ignore"):
            mass = (base ** (1 / (alpha - 1))).sum()
    assert c[0, 0] >= 0
    assert mass >= 1 - 1e-12
    if alpha > 2 or (masked and size > 1):
        assert c[0, 0] == 0


def test_mean_start_above_the_shift_is_mended():
    """float32 rows of one value in [1e4, 1.1e4] (three entries 0.01 above it): Jensen's
    bound is tight there, and the rounded row mean puts the start above the shift in a
    third of the rows (checked: a mass below 1 there); the map is still within 1e-6 of
    float64 on the same float32 values, at alpha = 0.5, 1.2, 1.3 (largest entries
    first) and 2."""
    from tsallis.core import discrete as core

    gen = torch.Generator().manual_seed(3)
    x = (1e4 + 997.3 * torch.rand(512, 1, generator=gen)).expand(512, 1000).contiguous()
    x[:, :3] += torch.rand(512, 3, generator=gen) * 0.01
    z, size = x.numpy(), x.shape[-1]
    top = z.max(-1, keepdims=True)
    for alpha in (0.5, 1.2, 1.3, 2.0):
        hi = np.full_like(top, (1 - size ** (1 - alpha)) / (alpha - 1))
        c = core._mean_start(z, top, np.zeros_like(top), hi, alpha, lambda t: t)
        u = z.astype(np.float64) - top - c
        mass = (np.maximum(1 + (alpha - 1) * u, 0.0) ** (1 / (alpha - 1))).sum(-1)
        assert (mass < 1).sum() >= 100
        error = (entmax(x, alpha).double() - entmax(x.double(), alpha)).abs().max().item()
        assert error <= 1e-6, (alpha, error)


@pytest.mark.parametrize("alpha", [1.5, 2.0])
def test_small_calls_on_numpy_views_match_torch(alpha, monkeypatch):
    """Small CPU calls run the sort-based map on NumPy views (tuning.NUMPY_VIEW_ELEMENTS):
    p within 2 ulps (float32) and 1e-15 (float64) of the same map in Torch's operations
    (the limit set to 0), the gradient of (p * w).sum() within that times max |w|
    (measured: p equal, the gradient 1 ulp of max |w| apart), on (1, 10), (16, 16) and
    (32, 1000) rows; p is in Torch's own memory (it can be resized), and the views ran."""
    from tsallis.core import discrete as core
    from tsallis.core import tuning

    viewed = []
    original = core._view
    monkeypatch.setattr(core, "_view", lambda t: viewed.append(1) or original(t))
    gen = torch.Generator().manual_seed(13)
    for shape in ((1, 10), (16, 16), (32, 1000)):
        for dtype, tol in ((torch.float32, 2 * 2**-23), (F64, 1e-15)):
            x = torch.randn(shape, generator=gen, dtype=dtype) * 2
            w = torch.randn(shape, generator=gen, dtype=dtype)
            results = []
            for limit in (tuning.NUMPY_VIEW_ELEMENTS, 0):
                monkeypatch.setattr(tuning, "NUMPY_VIEW_ELEMENTS", limit)
                xg = x.clone().requires_grad_(True)
                p = entmax(xg, alpha)
                (p * w).sum().backward()
                results.append((p.detach(), xg.grad))
            (p, g), (p0, g0) = results
            assert (p - p0).abs().max() <= tol
            assert (g - g0).abs().max() <= tol * w.abs().max()
            p.resize_(p.numel() + 1)  # (a tensor over NumPy's memory raises here)
    assert viewed


@pytest.mark.parametrize("alpha", [1.3, 1.5, 1.7, 2.0])
def test_the_device_sort_path_on_the_cpu(alpha, monkeypatch):
    """The maps as a GPU runs them, forced on the CPU so that CI runs them: at 3/2 and 2
    the sort-based map (Torch operations only: no NumPy view, no prefix width, a sort at
    any size), at 1.3 and 1.7 the Newton loop on whole rows with the stacked powers from
    the sorted rows' start (no start from the largest entries, no rows finished apart).
    Float64 within 1e-12 of 40-digit mpmath; float32 within 1e-6 of the float64 map on
    rows with ties at the top, -inf entries and a 1e30 spread, gradient of (p * w).sum()
    within 4 float32 ulps of max |w| (measured: p 9.3e-8 / 1.6e-7 / 6.8e-8 / 2.0e-8 off
    at 1.3 / 1.7 / 3/2 / 2, the gradient 1.7e-7 to 8.4e-7, max |w| 4.4)."""
    from array_api_compat import is_torch_array

    from tsallis.core import discrete as core
    from tsallis.core import tuning

    monkeypatch.setattr(core, "_eager_cpu", lambda z: not is_torch_array(z))
    monkeypatch.setattr(core, "_numpy_viewable", lambda z: False)
    if alpha in tuning.SORT_ELEMENTS:
        monkeypatch.setitem(tuning.SORT_ELEMENTS, alpha, 1 << 40)
    stacked = []  # the Newton loop's stacked powers, seen
    exponents = core._stacked_exponents
    monkeypatch.setattr(core, "_stacked_exponents", lambda *a: stacked.append(1) or exponents(*a))
    started = []  # the start from the sorted rows (_top_jensen_shift), seen
    jensen = core._top_jensen_shift
    monkeypatch.setattr(core, "_top_jensen_shift", lambda *a: started.append(1) or jensen(*a))
    gen = torch.Generator().manual_seed(21)
    x = torch.randn(3, 12, generator=gen, dtype=F64) * 3
    for row, got in zip(x.numpy(), entmax(x, alpha).numpy(), strict=True):
        assert np.abs(got - _exact(row, alpha)).max() <= 1e-12
    x = torch.randn(64, 1000, generator=gen) * 3
    x[1, :5] = x[1].max()  # ties at the top
    x[2, ::2] = float("-inf")
    x[3, :2] = torch.tensor([1e30, -1e30])
    w = torch.randn(64, 1000, generator=gen)
    grads = []
    for dtype in (torch.float32, F64):
        xg = x.to(dtype).detach().requires_grad_(True)
        p = entmax(xg, alpha)
        (p * w.to(dtype)).sum().backward()
        grads.append((p.detach(), xg.grad))
    (p32, g32), (p64, g64) = grads
    assert (p32.double() - p64).abs().max() <= 1e-6
    assert (g32.double() - g64).abs().max() <= 4 * 2**-23 * w.abs().max()
    assert float(p64.sum(-1).sub(1).abs().max()) <= 1e-12
    assert bool(stacked) == (alpha not in (1.5, 2.0))
    assert bool(started) == (alpha not in (1.5, 2.0))


def _shift64(row: np.ndarray, alpha: float) -> float:
    """The shift c of alpha-entmax (p_i = [1 + (alpha - 1)(u_i - c)]_+^(1/(alpha - 1)), u =
    row - max) by 200 bisections in float64: an oracle written apart from the library."""
    u = row - row.max()
    lo, hi = 0.0, 1 / (alpha - 1)
    for _ in range(200):
        mid = (lo + hi) / 2
        mass = (np.maximum(1 + (alpha - 1) * (u - mid), 0.0) ** (1 / (alpha - 1))).sum()
        lo, hi = (mid, hi) if mass > 1 else (lo, mid)
    return lo


@pytest.mark.parametrize("alpha", [1.05, 1.3, 1.5, 1.7, 1.95])
def test_the_sorted_start_is_a_close_lower_bound(alpha):
    """The GPU loop's start (_top_jensen_shift: the largest over k of the k largest
    entries' mean less log_{2-alpha}(1/k)) lies below the shift (float64, against a
    bisection oracle) on rows of 1000 at spreads 1e-3 to 30, with ties at the top,
    -inf entries, a constant row and a row of one finite entry; and on N(0, 1) rows it
    is within 0.5 of the shift where the whole row's mean start (k = K alone, at least
    0) is more than 1 off at 1.3 (measured on these rows: 0.18 against 1.50)."""
    from tsallis.core import discrete as core

    gen = torch.Generator().manual_seed(5)
    rows = [torch.randn(8, 1000, generator=gen, dtype=F64) * s for s in (1e-3, 1.0, 30.0)]
    x = torch.cat(rows)
    x[0, :4] = x[0].max()
    x[1, ::3] = float("-inf")
    x[2] = 0.7
    x[3, 1:] = float("-inf")
    top = x.amax(-1, keepdim=True)
    bound = core._top_jensen_shift(x, top, alpha)[:, 0].numpy()
    shift = np.array([_shift64(row, alpha) for row in x.numpy()])
    assert bound.shape == (24,)
    assert np.all(bound <= shift + 1e-12 * np.maximum(shift, 1.0))
    if alpha == 1.3:
        gaps = (shift - bound)[8:16]
        assert gaps.max() <= 0.5
        u = (x[8:16] - top[8:16]).numpy()
        mean_start = np.maximum(u.mean(-1) + (1 - 1000.0 ** (1 - alpha)) / (alpha - 1), 0.0)
        assert (shift[8:16] - mean_start).max() >= 1.0


@pytest.mark.parametrize("alpha", [1.2, 1.35, 1.7, 2.0])
@pytest.mark.parametrize("length", [1000, 333])
def test_the_grouped_start_is_a_close_lower_bound(alpha, length):
    """The host loop's start from the column groups' maxima (_grouped_shift: Jensen's
    bound on the sorted maxima of about 64 groups) lies below the shift (float64, against
    the bisection oracle) on rows of 1000 and of 333 (odd lengths drop a column per
    halving) at spreads 1e-3 to 30, with ties at the top, -inf entries (a whole group of
    them in one row), a constant row and a row of one finite entry, for NumPy and Torch
    alike; and on N(0, 1) rows its largest gap to the shift is at most half the smallest
    of the whole row's mean start (rows of 1000, measured: 0.38 / 0.24 / 0.08 / 0.06
    against 1.08 / 0.58 / 0.23 / 0.14 at 1.2 / 1.35 / 1.7 / 2)."""
    from tsallis.core import discrete as core

    gen = torch.Generator().manual_seed(5)
    x = torch.cat([torch.randn(8, length, generator=gen, dtype=F64) * s for s in (1e-3, 1.0, 30.0)])
    x[0, :4] = x[0].max()
    x[1, ::3] = float("-inf")
    x[2] = 0.7
    x[3, 1:] = float("-inf")
    x[4, : length // 2] = float("-inf")  # (the first halving pairs them with finite entries)
    x[5, ::2] = float("-inf")  # (groups of -inf alone)
    top = x.amax(-1, keepdim=True)
    shift = np.array([_shift64(row, alpha) for row in x.numpy()])
    both = (
        core._grouped_shift(x, top, alpha, lambda t: t.numpy())[:, 0],
        core._grouped_shift(x.numpy(), top.numpy(), alpha, lambda t: t)[:, 0],
    )
    np.testing.assert_allclose(both[0], both[1], rtol=1e-12, atol=1e-12)
    for bound in both:
        assert bound.shape == (24,)
        assert np.all(bound <= shift + 1e-12 * np.maximum(shift, 1.0))
    gaps = (shift - both[0])[8:16]
    u = (x[8:16] - top[8:16]).numpy()
    mean_start = np.maximum(u.mean(-1) + (1 - length ** (1 - alpha)) / (alpha - 1), 0.0)
    assert gaps.max() <= 0.5 * (shift[8:16] - mean_start).min()


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    length=st.integers(128, 400),
    alpha=st.sampled_from([1.2, 1.4, 1.6, 1.7, 1.9, 2.0]),
    spread=st.sampled_from([1e-3, 0.3, 1.0, 10.0, 1e4]),
    edit=st.sampled_from(["none", "ties", "-inf", "grid"]),
)
def test_the_grouped_start_fuzzed(seed, length, alpha, spread, edit):
    """The Newton loop from the groups' bound (no prefix start), on rows of 128 to 400 at
    spreads 1e-3 to 1e4 with ties at the top, -inf entries or values on a grid (ties
    everywhere, entries at the support's edge): float64 p within 1e-12 of the bisection
    oracle, float32 within 1e-6."""
    from tsallis.core import discrete as core
    from tsallis.core import tuning

    rng = np.random.default_rng(seed)
    x = rng.standard_normal((4, length)) * spread
    if edit == "ties":
        x[:, : length // 10] = x.max(-1, keepdims=True)
    elif edit == "-inf":
        x[rng.random(x.shape) < 0.6] = -np.inf
        x[:, 0] = 0.0
    elif edit == "grid":
        x = np.round(x / spread * 4) / 4

    def exact(x: np.ndarray) -> np.ndarray:
        u = x - x.max(-1, keepdims=True)
        shift = np.array([_shift64(row, alpha) for row in x])[:, None]
        expected = np.maximum(1 + (alpha - 1) * (u - shift), 0.0) ** (1 / (alpha - 1))
        return expected / expected.sum(-1, keepdims=True)

    with mock.patch.object(tuning, "PARTITION_PAYS", False):
        assert core._grouped_start_applies(torch.from_numpy(x), alpha, True)
        p64 = core.entmax_newton(torch.from_numpy(x), alpha).numpy()
        p32 = core.entmax_newton(torch.from_numpy(x).float(), alpha).double().numpy()
    assert np.abs(p64 - exact(x)).max() <= 1e-12
    # float32 against the map of its own input: rounding entries of up to about 40 (spread
    # 10) to float32 moves them by up to 1.9e-6, and p with them (seed 77361, 161 columns
    # at alpha = 2: 1.05e-6 from the map of the float64 input, 4e-8 from its own)
    assert np.abs(p32 - exact(x.astype(np.float32).astype(np.float64))).max() <= 1e-6


def test_the_grouped_start_saves_evaluations(monkeypatch):
    """Without the prefix start (tuning.PARTITION_PAYS off, as where NumPy's partition is
    slow), the loop also starts from the groups' bound from alpha = 1.2 to 2 on rows of at
    least 128 (CPU tensors: not at 3/2 nor from 1.25 to below 1.36): on float32 N(0, 1)
    rows (256, 1000) it takes at least 1.5 evaluations fewer at 1.45, 1.7 and 2, at least
    0.5 fewer at 1.2 (weighted by the rows they take), with p within 1e-6 of the float64
    map, and in float64 within 1e-12; for tensors at 1.15, 1.3, 1.35 and 3/2, for an
    alpha per row, or on rows of 100, it does not run; for NumPy arrays at 1.3 and 3/2
    it does."""
    from tsallis.core import discrete as core
    from tsallis.core import tuning

    monkeypatch.setattr(tuning, "PARTITION_PAYS", False)
    count = [0.0]
    evaluate = core._evaluate

    def counted(c, *args):
        count[0] += c.shape[0] / 256
        return evaluate(c, *args)

    monkeypatch.setattr(core, "_evaluate", counted)
    z = torch.randn(256, 1000, generator=torch.Generator().manual_seed(3))
    for alpha, fewer in ((1.2, 0.5), (1.45, 1.5), (1.7, 1.5), (2.0, 1.5)):
        counts, maps = [], []
        for length in (10**9, 128):
            monkeypatch.setattr(tuning, "GROUPED_MIN_LENGTH", length)
            count[0] = 0.0
            maps.append(entmax(z, alpha=alpha).double())
            counts.append(count[0])
            maps.append(entmax(z.double(), alpha=alpha))
        assert counts[1] <= counts[0] - fewer, (alpha, counts)
        exact = maps[1]
        assert (maps[2] - exact).abs().max() <= 1e-6, alpha
        assert (maps[3] - exact).abs().max() <= 1e-12, alpha
    for alpha in (1.15, 1.3, 1.35, 1.5):
        assert not core._grouped_start_applies(z, alpha, True)
    for alpha in (1.3, 1.5, 1.7):
        assert core._grouped_start_applies(z.numpy(), alpha, True)
    assert core._grouped_start_applies(z, 1.7, True)
    assert not core._grouped_start_applies(z[:, :100], 1.7, True)
    assert not core._grouped_start_applies(z, np.full((256, 1), 1.7), True)
    assert not core._grouped_start_applies(z, 1.7, False)


def test_the_maxima_step_lands_near_the_shift():
    """The CPU loop's start from one Halley step on the mass of 128 column groups'
    maxima (_maxima_step_shift), float32 N(0, 1) rows (64, 1000) at alpha = 1.3 against
    the float64 bisection oracle: at most 0.2 below the shift on every row (within the
    reach of two evaluations: measured 0.14 at most, 0.03 median) and 0.06 at the median,
    where the whole row's mean start is more than 1 below at the median (measured 1.34);
    above it by at most 0.01 (Halley's step may overshoot)."""
    from tsallis.core import discrete as core

    z = torch.randn(64, 1000, generator=torch.Generator().manual_seed(11))
    top = z.amax(-1, keepdim=True)
    alpha = 1.3
    _, to_book, to_work = core._bookkeeping(z, True)
    start = core._maxima_step_shift(z, top, to_book(top), alpha, to_book, to_work)[:, 0]
    shift = np.array([_shift64(row, alpha) for row in z.double().numpy()])
    assert start.shape == (64,)
    assert (shift - start).max() <= 0.2
    assert np.median(shift - start) <= 0.06
    assert (start - shift).max() <= 0.01
    lo = np.zeros((64, 1))
    hi = lo + core._upper_shift(1000, alpha)
    mean_start = core._mean_start(z, to_book(top), lo, hi, alpha, to_book)[:, 0]
    assert np.median(shift - mean_start) >= 1.0


@pytest.mark.parametrize("alpha", [1.3, 1.35])
@pytest.mark.parametrize("sigma", [0.5, 1.0])
def test_the_maxima_step_saves_an_evaluation(alpha, sigma, monkeypatch):
    """From _maxima_step_shift (without the prefix start, tuning.PARTITION_PAYS off, as
    measured on the machine of tuning) the CPU loop evaluates float32 N(0, sigma^2) rows
    (256, 1000) twice and ends on the finish (_Buffers.finished), or once and goes on over
    the entries that can still be in the support (_narrowed: 1.35 on N(0, 1) rows), where
    from the mean start it evaluated them at least three times (measured: three and the
    finish, or four at 1.35 on N(0, 1) rows); p within 1e-6 of the float64 map either
    way. Twice needs the loop to foresee its last step on its fast path too (where every
    row still moves by more than the stall tolerance): without that, N(0, 0.5^2) rows at
    1.3 took three."""
    from tsallis.core import discrete as core
    from tsallis.core import tuning

    calls = []
    evaluate, finished = core._evaluate, core._Buffers.finished

    def counted(c, a, work, *args):
        calls.append("F" if work.x.shape == (256, 1000) else tuple(work.x.shape))
        return evaluate(c, a, work, *args)

    def finish(self, *args):
        calls.append("f")
        return finished(self, *args)

    monkeypatch.setattr(tuning, "PARTITION_PAYS", False)  # (no prefix start: as measured here)
    monkeypatch.setattr(core, "_evaluate", counted)
    monkeypatch.setattr(core._Buffers, "finished", finish)
    z = torch.randn(256, 1000, generator=torch.Generator().manual_seed(7)) * sigma
    exact = entmax(z.double(), alpha=alpha)
    for on in (True, False):
        monkeypatch.setattr(tuning, "MAXIMA_STEP", on)
        calls.clear()
        p = entmax(z.requires_grad_(), alpha=alpha)
        if on:  # (or the rows narrowed after the first: 96 columns at 1.35 on N(0, 1))
            assert calls[0] == (256, 125), calls
            assert calls[1:] in (["F", "F", "f"], ["F", *[(256, 96)] * 3]), calls
        else:
            assert calls.count("F") >= 3, calls
        assert (p.double() - exact).abs().max() <= 1e-6


def test_the_maxima_step_applies():
    """_maxima_step_applies: CPU tensors (not NumPy arrays, nor under the device's loop)
    at 1.3 and 1.35 (not at 1.25 and 4/3, whole powers, nor at 1.2 or 1.4, outside the
    band) on rows of at least 256 whose median (alpha - 1)(max - mean) is from 0.4 to 1.5:
    N(0, 1) rows (0.97 at 1.3), not N(0, 0.3^2) (0.29) nor N(0, 3^2) (2.9)."""
    from tsallis.core import discrete as core

    def applies(z, alpha, on_host=True):
        top = z.max(-1, keepdims=True)
        top = top.values.numpy() if isinstance(z, torch.Tensor) else top
        spread = core._mean_gap(z, top, lambda t: t.numpy() if isinstance(t, torch.Tensor) else t)
        return core._maxima_step_applies(z, alpha, on_host, spread)

    z = torch.randn(256, 1000, generator=torch.Generator().manual_seed(2))
    assert applies(z, 1.3) and applies(z, 1.35)
    assert not any(applies(z, a) for a in (1.25, 4 / 3, 1.2, 1.4))
    assert not applies(z * 0.3, 1.3) and not applies(z * 3, 1.3)
    assert not applies(z.numpy(), 1.3)
    assert not applies(z, 1.3, on_host=False)
    assert not applies(z[:, :255], 1.3)
    assert not applies(z[:32], 1.3)  # (32000 values: below tuning.COMPACT_ELEMENTS)


@pytest.mark.parametrize(("alpha", "spread"), [(1.3, 30.0), (1.4, 30.0), (1.3, 1.0), (1.26, 3.0)])
def test_the_device_loop_ends_on_the_device(alpha, spread, monkeypatch):
    """Below 3/2 the GPU's loop (forced on the CPU) leaves its last evaluation on the
    device once every row's next step is predicted within the stall tolerance (Newton's
    error |h''/(2h')| step^2; up to QUARTIC_ALPHA also a Halley step's own, |h'''/(6h') -
    (h''/(2h'))^2| step^3, without which the rows of spread 1 and 3 took three host reads):
    two evaluations are read on the host and the third is not, and p stays within 1e-6
    (float32) and 1e-12 (float64) of the CPU's map, the gradient within 4 float32 ulps of
    max |w| (measured: p at most 1.1e-7 in float32, 2.8e-16 in float64)."""
    from array_api_compat import is_torch_array

    from tsallis.core import discrete as core

    gen = torch.Generator().manual_seed(0)
    x = torch.randn(64, 1000, generator=gen, dtype=F64) * spread
    x[1, :4] = x[1].max()  # ties at the top
    x[2, ::2] = float("-inf")
    x = x.float().double()  # (float32 values: the float32 map's own input, exactly)
    w = torch.randn(64, 1000, generator=gen, dtype=F64)
    expected = {}
    for dtype in (torch.float32, F64):
        xg = x.to(dtype).detach().clone().requires_grad_(True)
        p = entmax(xg, alpha)
        (p * w.to(dtype)).sum().backward()
        expected[dtype] = (p.detach().double(), xg.grad.double())
    monkeypatch.setattr(core, "_eager_cpu", lambda z: not is_torch_array(z))
    monkeypatch.setattr(core, "_numpy_viewable", lambda z: False)
    counts = {"host": 0, "all": 0}
    evaluate, mass = core._evaluate, core._mass

    def counted(name: str, f):
        return lambda *a, **k: counts.__setitem__(name, counts[name] + 1) or f(*a, **k)

    monkeypatch.setattr(core, "_evaluate", counted("host", evaluate))
    monkeypatch.setattr(core, "_mass", counted("all", mass))
    for dtype, tol in ((torch.float32, 1e-6), (F64, 1e-12)):
        counts.update(host=0, all=0)
        xg = x.to(dtype).detach().clone().requires_grad_(True)
        p = entmax(xg, alpha)
        (p * w.to(dtype)).sum().backward()
        if dtype == torch.float32:
            assert (counts["host"], counts["all"]) == (2, 3)
        p0, g0 = expected[F64]  # (the CPU's float64 map, checked against mpmath above)
        assert float((p.detach().double() - p0).abs().max()) <= tol
        ulps = 4 * (2**-23 if dtype == torch.float32 else 2**-52)
        assert float((xg.grad.double() - g0).abs().max()) <= ulps * float(w.abs().max())


@pytest.mark.parametrize("alpha", [1.1, 1.26, 1.3, 1.32])
def test_the_halley_error_estimate(alpha):
    """The generated halley_error and halley_bend (the GPU loop's prediction below 4/3, its
    Halley step) on a float64 row, against oracles written apart from the library: the
    bend within 1e-12 of (1 - alpha/2)(T - S^2/P)/S, the error coefficient within 1e-3 of
    the same with h''' from a finite difference of h (up to 1.3), and the error left by
    a Halley step from 1e-2 and 1e-3 below the shift within 7% and 1.5% of the estimate
    times the step cubed (measured on three seeds up to 1.32: at most 6% and 1.1%; near
    4/3 it fails, hence QUARTIC_ALPHA)."""
    from tsallis.core._generated import discrete as gen

    rng = np.random.default_rng(3)
    u = rng.standard_normal(1000)
    u -= u.max()
    e = 1 / (alpha - 1)

    def sums(c: float) -> tuple[float, ...]:
        y = np.maximum(1 + (alpha - 1) * (u - c), 0.0)
        return tuple(float((y ** (e - j)).sum()) for j in range(4))  # p, s, t, u

    def h(c: float) -> float:
        return (sums(c)[0] ** (alpha - 1) - 1) / (alpha - 1)

    lo, hi = 0.0, e
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if sums(mid)[0] > 1 else (lo, mid)
    shift = lo
    # h''' against a finite difference (h' = -q S gives the scale)
    c, d = shift - 0.05, 1e-3
    big_p, big_s, big_t, big_u = sums(c)
    bend = (1 - alpha / 2) * (big_t - big_s**2 / big_p) / big_s
    args = [np.array([v]) for v in (big_p, big_s, big_t, big_u)]
    cubic = abs(float(gen.halley_error(*args, alpha)[0]))
    assert abs(float(gen.halley_bend(*args[:3], alpha)[0]) - bend) <= 1e-12 * abs(bend)
    slope_h = -(big_p ** (alpha - 2)) * big_s  # h'

    def difference(d: float) -> float:  # h''' to O(d^2)
        return (h(c + 2 * d) - 2 * h(c + d) + 2 * h(c - d) - h(c - 2 * d)) / (2 * d**3)

    third = (4 * difference(d / 2) - difference(d)) / 3  # Richardson: to O(d^4)
    if alpha <= 1.3:  # (nearer 4/3 h''' is too rough for the differences: 1.2% at 1.32)
        assert abs(cubic - abs(third / (6 * slope_h) - bend * bend)) <= 1e-3 * cubic
    for gap, tol in ((1e-2, 0.07), (1e-3, 0.015)):
        c = shift - gap
        big_p, big_s, big_t, big_u = sums(c)
        q = big_p ** (alpha - 2)
        newton = (big_p ** (alpha - 1) - 1) / (alpha - 1) / (q * big_s)
        bend = (1 - alpha / 2) * (big_t - big_s**2 / big_p) / big_s
        step = newton / (1 - newton * bend)
        args = [np.array([v]) for v in (big_p, big_s, big_t, big_u)]
        estimate = abs(float(gen.halley_error(*args, alpha)[0])) * abs(step) ** 3
        actual = abs(c + step - shift)
        assert abs(actual - estimate) <= tol * estimate


@pytest.mark.parametrize("alpha", [0.5, 1.0, 1.3, 1.7, 3.0])
def test_small_newton_calls_on_numpy_views_match_torch(alpha, monkeypatch):
    """Small CPU calls at a Python-float alpha run the Newton loop on NumPy views
    (tuning.NUMPY_NEWTON_ELEMENTS; the test run sets it to 0, this test to the shipped
    2^13). Against the same loop in Torch's operations (the limit 0), on rows of 10, 64
    and 1000 entries (the last with the start from the largest entries and its column
    slopes) with ties at the top and -inf entries: float32 p within 4 ulps and the
    gradient of (p * w).sum() within 4 ulps of max |w| (each way is within about 2 ulps
    of the exact map; measured 2.4e-7 and 3.7e-7 at most over alpha from 0.5 to 5),
    float64 within 1e-15 and 1e-13 (above 2 only at unit spreads: near the support's
    edge dp/dz = p^(2 - alpha) is unbounded, and at a spread of 1e-3 the two gradients
    were 8e-12 apart). No NumPy warning escapes, p is in Torch's own memory, and the
    views ran."""
    import warnings

    from tsallis.core import discrete as core
    from tsallis.core import tuning

    viewed = []
    original = core.entmax_newton
    monkeypatch.setattr(
        core,
        "entmax_newton",
        lambda z, *a, **k: viewed.append(isinstance(z, np.ndarray)) or original(z, *a, **k),
    )
    gen = torch.Generator().manual_seed(17)
    for shape in ((1, 10), (8, 64), (2, 1000)):
        for dtype, tol, gtol in ((torch.float32, 4 * 2**-23, 4 * 2**-23), (F64, 1e-15, 1e-13)):
            x = torch.randn(shape, generator=gen, dtype=dtype) * 3
            x[0, :3] = x[0].max()
            if shape[0] > 1:
                x[1, ::3] = float("-inf")
            w = torch.randn(shape, generator=gen, dtype=dtype)
            results = []
            for limit in (1 << 13, 0):
                monkeypatch.setattr(tuning, "NUMPY_NEWTON_ELEMENTS", limit)
                viewed.clear()
                xg = x.clone().requires_grad_(True)
                with warnings.catch_warnings():
                    warnings.simplefilter("error")
                    p = entmax(xg, alpha)
                (p * w).sum().backward()
                assert viewed and all(viewed) == (limit > 0), (shape, limit, viewed)
                results.append((p.detach(), xg.grad))
            (p, g), (p0, g0) = results
            assert (p - p0).abs().max() <= tol, (shape, dtype, (p - p0).abs().max())
            assert (g - g0).abs().max() <= gtol * w.abs().max(), (shape, dtype)
            assert torch.isinf(x).sum() == 0 or (p[torch.isinf(x)] == 0).all()
            p.resize_(p.numel() + 1)  # (a tensor over NumPy's memory raises here)


def _map_and_grad(
    v: torch.Tensor, alpha: float, grad: torch.Tensor, spied: str, patches: dict
) -> tuple[torch.Tensor, torch.Tensor, int]:
    """entmax(v, alpha) and dL/dv for L = <p, grad>, counting the calls of
    core.discrete's ``spied`` that return something, with ``patches`` ((object, name) ->
    value) in place."""
    from tsallis.core import discrete as core

    calls = []
    original = getattr(core, spied)

    def spy(*args):
        out = original(*args)
        calls.append(out is not None)
        return out

    with contextlib.ExitStack() as stack:
        stack.enter_context(mock.patch.object(core, spied, spy))
        for (target, name), value in patches.items():
            stack.enter_context(mock.patch.object(target, name, value))
        v = v.clone().requires_grad_()
        p = entmax(v, alpha=alpha)
        (p * grad.to(v.dtype)).sum().backward()
    return p.detach(), v.grad, sum(calls)


@pytest.mark.parametrize("pays", [False, True])
@pytest.mark.parametrize(
    "alpha, chain",
    [
        (1.25, (3, 0, 2)),
        (9 / 7, (2, 1, 2)),
        (4 / 3, (2, 0, 2)),
        (1.4, (1, 1, 2)),
        (14 / 11, (2, 2, 3)),
        (1.3, (2, 1, 3)),
        (1.375, (1, 2, 3)),
        (10 / 7, (1, 1, 3)),
    ],
)
def test_rational_powers_take_no_transcendental(alpha, chain, pays):
    """At alphas whose powers of the state are whole, half or thirds (s = y^(1/(alpha -
    1) - 1): 3, 5/2, 2, 3/2; 8/3, 7/3, 5/3, 4/3) the loop evaluates by multiplications
    and a square or cube root (core.discrete._rooted_mass, taken on every evaluation;
    the cube root NumPy's, arrays.cbrt_into): on rows of 1000 at spreads
    0.3, 1 and 5 with ties at the top, -inf entries and a constant row, float64 p within
    1e-12 of the bisection oracle and within 1e-14 of the general form (log2 and exp2;
    dL/dz too), float32 within 1e-6 of the oracle on its own input with 0 at -inf, and
    the NumPy face within 1e-14 of the general form; with and without the start from
    each row's largest entries (tuning.PARTITION_PAYS). Nearby alphas take the general
    form."""
    from tsallis.core import discrete as core
    from tsallis.core import tuning

    assert core._rational_power(alpha) == chain
    for other in (1.2, 1.31, 1.2500001, 1.3000001, 1.45, 1.5, 1.6, 1.75):
        assert core._rational_power(other) is None
    gen = torch.Generator().manual_seed(11)
    x = torch.cat([torch.randn(6, 1000, generator=gen, dtype=F64) * s for s in (0.3, 1.0, 5.0)])
    x[0, :5] = x[0].max()
    x[1, ::3] = -math.inf
    x[2] = 0.7
    x32 = x.float()
    grad = torch.randn(x.shape, generator=gen, dtype=F64)

    power = core._rational_power

    def run(v: torch.Tensor, general: bool) -> tuple[torch.Tensor, torch.Tensor, int]:
        patches = {
            (core, "_rational_power"): (lambda a: None) if general else power,
            (tuning, "PARTITION_PAYS"): pays,
        }
        return _map_and_grad(v, alpha, grad, "_rooted_mass", patches)

    p64, g64, evaluations = run(x, False)
    assert evaluations >= 2
    general, general_grad, none = run(x, True)
    assert none == 0
    assert (p64 - general).abs().max() <= 1e-14
    assert (g64 - general_grad).abs().max() <= 1e-14
    u = x.numpy()

    def exact(v: np.ndarray) -> np.ndarray:
        shift = np.array([_shift64(row, alpha) for row in v])[:, None]
        e = np.maximum(1 + (alpha - 1) * (v - v.max(-1, keepdims=True) - shift), 0.0)
        e = e ** (1 / (alpha - 1))
        return e / e.sum(-1, keepdims=True)

    assert np.abs(p64.numpy() - exact(u)).max() <= 1e-12
    p32 = run(x32, False)[0]
    assert np.abs(p32.double().numpy() - exact(x32.double().numpy())).max() <= 1e-6
    assert (p32[1, ::3] == 0).all() and (p64[1, ::3] == 0).all()
    with mock.patch.object(core, "_rational_power", lambda a: None):
        face_general = np_discrete.entmax(u, alpha=alpha)
    assert np.abs(np_discrete.entmax(u, alpha=alpha) - face_general).max() <= 1e-14


@pytest.mark.parametrize("alpha", [2.5, 5.0, 10.0])
def test_above_two_runs_on_the_entries_near_the_maximum(alpha):
    """Above 2 only entries within 1/(alpha - 1) of the row maximum can be in the support
    (the shift is at least the maximum's); on long spread rows the loop runs on those
    alone, packed (core.discrete._above_two_packed; here without the start from each
    row's largest entries, tuning.ABOVE_TWO_LARGEST), and puts p and s back among zeros:
    on (80, 1000) float64 rows (N(0, 1) and N(0, 9), -inf entries, ties at the top, a
    row of one finite entry) p within 1e-14 of the loop over the whole rows and dL/dz
    within 32 eps (alpha - 2) of each row's largest, p within 1e-12 of 40-digit mpmath
    (two rows); float32 within 1e-7 of the float64 map of its rounded input; a (2, 40, 1000)
    batch as its rows. Rows that keep too many entries (N(0, 0.01)) take the whole
    rows."""
    from tsallis.core import discrete as core

    gen = torch.Generator().manual_seed(4)
    x = torch.cat([torch.randn(40, 1000, generator=gen, dtype=F64) * s for s in (1.0, 3.0)])
    x[0, ::2] = -math.inf
    x[1, :7] = x[1].max()
    x[2, 1:] = -math.inf
    grad = torch.randn(x.shape, generator=gen, dtype=F64)

    applies = core._above_two_support

    def run(v: torch.Tensor, packed: bool) -> tuple[torch.Tensor, torch.Tensor, int]:
        patches = {(core, "_above_two_support"): applies if packed else (lambda *args: False)}
        patches[core.T, "ABOVE_TWO_LARGEST"] = ()
        return _map_and_grad(v, alpha, grad, "_above_two_packed", patches)

    p, g, taken = run(x, True)
    assert taken == 1
    whole, whole_grad, none = run(x, False)
    assert none == 0
    assert (p - whole).abs().max() <= 1e-14
    # dL/dz relative to each row's largest (at 10 the row of 7 tied maxima has entries
    # near the edge, and dL/dz reaches 4.9e7 there): s = p^(2 - alpha) moves by alpha - 2
    # times p's relative difference, so 32 eps (alpha - 2) (measured 3.8e-14 at 10, 3.2e-15
    # at 5, 4e-16 at 2.5)
    scale = whole_grad.abs().amax(-1, keepdim=True).clamp(min=1.0)
    eps = torch.finfo(F64).eps
    assert ((g - whole_grad).abs() / scale).max() <= 32 * eps * (alpha - 2)
    for row in (1, 40):  # (the float64 bisection oracle cannot resolve the edge at 10)
        assert np.abs(p[row].numpy() - _exact(x[row].numpy(), alpha)).max() <= 1e-12
    assert p[2, 0] == 1 and (p[0, ::2] == 0).all()
    # float32 against the float64 map of its own (rounded) input
    rounded = run(x.float().double(), True)[0]
    assert (run(x.float(), True)[0].double() - rounded).abs().max() <= 1e-7
    batch = x.reshape(2, 40, 1000)
    with mock.patch.object(core.T, "ABOVE_TWO_LARGEST", ()):
        assert (entmax(batch, alpha=alpha).reshape(80, 1000) - p).abs().max() == 0
    dense = torch.randn(80, 1000, generator=gen, dtype=F64) * 0.01
    assert run(dense, True)[2] == 0


def _exact_entmax_grad(row: np.ndarray, alpha: float, grad: np.ndarray) -> np.ndarray:
    """dL/dz of L = <entmax(z), grad> for one row above alpha = 2 with 50-digit mpmath:
    the threshold tau by 200 bisections, s = p^(2 - alpha) on the support, and dL/dz =
    s (grad - <s, grad> / sum(s))."""
    with mp.workdps(50):
        a = mp.mpf(alpha)
        zs = [mp.mpf(float(v)) for v in row]

        def powers(tau, exponent):
            return [((a - 1) * (v - tau)) ** exponent if v > tau else mp.mpf(0) for v in zs]

        lo, hi = max(zs) - 1 / (a - 1), max(zs)
        for _ in range(200):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if sum(powers(mid, 1 / (a - 1))) > 1 else (lo, mid)
        s = powers((lo + hi) / 2, (2 - a) / (a - 1))
        g = [mp.mpf(float(v)) for v in grad]
        mean = sum(si * gi for si, gi in zip(s, g, strict=True)) / sum(s)
        return np.array([float(si * (gi - mean)) for si, gi in zip(s, g, strict=True)])


@pytest.mark.parametrize("alpha", [2.5, 5.0, 10.0])
def test_above_two_starts_from_the_largest_entries(alpha):
    """Above 2 the loop first solves each row's 8 largest entries alone, then the rows
    whose smallest kept entry got p > 0 over their 64 largest, then the rest as before
    (core.discrete._above_two_rows): on (96, 1000) float64 rows (N(0, 1), N(0, 0.01^2)
    whose support at 2.5 holds 34 entries, N(0, 1e-4^2) and constant rows whose support
    is the whole row, a row of three finite entries, ties at the top) p within 1e-14 of
    the loop over the whole rows and dL/dz within 32 eps (alpha - 2) of each row's
    largest (as the packed map's test), dL/dz of two rows against 50-digit mpmath; so
    too an alpha per row (2.1 to 10) and NumPy's map. Fails if a row whose support
    reaches its smallest kept entry is taken as held (the constant rows would get 1/8
    each), or without the backward's centering (row 13 at 10)."""
    from tsallis.core import discrete as core

    gen = torch.Generator().manual_seed(7)
    scales = (1.0, 0.01, 1e-4)
    x = torch.cat([torch.randn(32, 1000, generator=gen, dtype=F64) * s for s in scales])
    x[64:68] = 0.25  # constant rows
    x[1, 3:] = -math.inf
    x[2, :7] = x[2].max()
    grad = torch.randn(x.shape, generator=gen, dtype=F64)
    applies = core._above_two_support
    widths = []
    original = core._largest

    def largest(z, width):
        widths.append((width, z.shape[0]))
        return original(z, width)

    def run(v, a, fewer: bool):
        patches = {(core, "_above_two_support"): applies if fewer else (lambda *args: False)}
        patches[core, "_largest"] = largest
        return _map_and_grad(v, a, grad, "_held_rows", patches)

    p, g, calls = run(x, alpha, True)
    whole, whole_grad, _ = run(x, alpha, False)
    assert widths[0] == (8, 96) and calls == len(widths)
    if alpha == 2.5:  # (34 entries at N(0, 0.01^2)): the next width, then the rest
        assert widths[1][0] == 64 and 64 <= widths[1][1] <= 66, widths
    assert (p - whole).abs().max() <= 1e-14
    assert (p[64:68] - 1e-3).abs().max() <= 1e-15
    # dL/dz, relative to each row's largest: against the whole rows' on the spread rows,
    # within the packed map's bound 32 eps (alpha - 2) (measured at most 3.9 eps (alpha -
    # 2)); on the dense rows the whole rows' own was 2.2e-14 off 50-digit mpmath (row 37 at
    # 2.5; this map 3.6e-15): there mpmath is the oracle. Row 13 at 10 (a second entry of
    # p = 0.087, whose slope is 1.4e-8 of the top's) tests the backward's centering
    # (core.discrete._centered_at_largest): both maps were 5.2e-9 off without it, 1.1e-16
    # with it
    spread = [*range(32), 64, 65]
    scale = whole_grad.abs().amax(-1, keepdim=True).clamp(min=1.0)
    eps = torch.finfo(F64).eps
    assert ((g - whole_grad).abs() / scale)[spread].max() <= 32 * eps * (alpha - 2)
    oracle_rows = {2.5: (37, 32 * eps), 10.0: (13, 8 * eps)}
    if alpha in oracle_rows:
        row, bound = oracle_rows[alpha]
        exact = _exact_entmax_grad(x[row].numpy(), alpha, grad[row].numpy())
        assert np.abs(g[row].numpy() - exact).max() <= bound * max(np.abs(exact).max(), 1)
    # an alpha per row, and NumPy's map
    per_row = torch.linspace(2.1, 10.0, 96, dtype=F64).reshape(-1, 1)
    p_rows, g_rows, _ = run(x, per_row, True)
    whole_rows, whole_rows_grad, _ = run(x, per_row, False)
    assert (p_rows - whole_rows).abs().max() <= 1e-14
    scale = whole_rows_grad.abs().amax(-1, keepdim=True).clamp(min=1.0)
    relative = ((g_rows - whole_rows_grad).abs() / scale)[spread]
    assert (relative / (per_row[spread] - 2)).max() <= 32 * eps
    with mock.patch.object(core, "_above_two_support", lambda *args: False):
        whole_numpy = np_discrete.entmax(x.numpy(), alpha=alpha)
    assert np.abs(np_discrete.entmax(x.numpy(), alpha=alpha) - whole_numpy).max() <= 1e-14


def test_above_two_backward_keeps_the_small_share():
    """dL/dz = s (g - <s, g> / sum(s)): at alpha = 10 on [0, -0.049] the second entry has
    p = 0.087 and a slope s = p^(2 - alpha) 1.5e8 times the first's, so <s, g> / sum(s)
    rounds to its g and its dL/dz, the first entry's small share, lost 6 digits (1.3e-9
    off 2.07, Torch's backward and the core's on NumPy arrays alike). Centred at that
    entry's g (core.discrete._centered_at_largest) both are within 32 eps (alpha - 2) of
    50-digit mpmath, relative to the largest |dL/dz| (measured 16 eps); dL/dalpha,
    shift-invariant too, is unchanged to 1e-12 relatively by a shift of g."""
    from tsallis.core import discrete as core

    z, g, alpha = np.array([0.0, -0.049]), np.array([0.3, -0.7]), 10.0
    with mp.workdps(50):
        a, zs = mp.mpf(alpha), [mp.mpf(float(v)) for v in z]

        def powers(tau, exponent):
            return [((a - 1) * (v - tau)) ** exponent if v > tau else mp.mpf(0) for v in zs]

        lo, hi = -1 / (a - 1), mp.mpf(0)
        for _ in range(200):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if sum(powers(mid, 1 / (a - 1))) > 1 else (lo, mid)
        slopes = powers((lo + hi) / 2, (2 - a) / (a - 1))
        mean = sum(si * float(gi) for si, gi in zip(slopes, g, strict=True)) / sum(slopes)
        exact = np.array([float(si * (float(gi) - mean)) for si, gi in zip(slopes, g, strict=True)])
    assert float(slopes[1] / slopes[0]) > 1e8
    # s = p^(2 - alpha) moves by (alpha - 2) times p's relative error (measured 16 eps)
    bound = 32 * np.finfo(np.float64).eps * (alpha - 2) * max(np.abs(exact).max(), 1.0)
    x = torch.tensor(z[None]).requires_grad_()
    (entmax(x, alpha) * torch.tensor(g[None])).sum().backward()
    assert np.abs(x.grad[0].numpy() - exact).max() <= bound
    p = np_discrete.entmax(z[None], alpha=alpha)
    dz, dalpha = core.entmax_alpha_gradient(p, g[None], alpha)
    assert np.abs(dz[0] - exact).max() <= bound
    shifted = core.entmax_alpha_gradient(p, g[None] + 5.0, alpha)[1]
    assert abs(shifted[0, 0] - dalpha[0, 0]) <= 1e-12 * abs(dalpha[0, 0])


def test_above_two_slopes_from_subnormal_bases():
    """The refinement's s = p / base (core.discrete._over_base): exact for a base below the
    smallest normal number, whose p is not small at a large alpha (1e-310 at alpha = 100:
    p = 7.7e-4), and 0 where base <= 0 (p = 0), in float64 and float32, NumPy and Torch."""
    from tsallis.core import discrete as core

    base = np.array([-1.0, 0.0, 1e-310, 1e-300, 0.5])
    p = np.where(base > 0, np.maximum(base, 0.0) ** (1 / 99), 0.0)
    expected = np.divide(p, base, out=np.zeros_like(p), where=base > 0)
    for v in (core._over_base(p, base), core._over_base(torch.tensor(p), torch.tensor(base))):
        assert np.array_equal(np.asarray(v), expected)
    b32 = np.array([-1.0, 0.0, 1e-40, 0.5], dtype=np.float32)
    p32 = np.where(b32 > 0, np.maximum(b32, 0) ** np.float32(1 / 99), 0).astype(np.float32)
    got = core._over_base(torch.tensor(p32), torch.tensor(b32)).numpy()
    assert np.array_equal(got, np.divide(p32, b32, out=np.zeros_like(p32), where=b32 > 0))


@pytest.mark.parametrize("alpha", [1.34, 1.35, 1.42, 1.45])
def test_exp2_band_pass_changes_nothing(alpha, monkeypatch):
    """Float32 CPU tensors between 4/3 and 3/2 set the clamped entries' log2 to -inf
    before the exp2 (tuning.EXP2_BAND: Torch's exp2 is slow on the floor's argument
    there, core.discrete._slow_exp2_band). exp2 of both is 0, so the map and its
    gradient are the same bit for bit as without the pass, on N(0, 1) and N(0, 0.3^2)
    rows with -inf entries; the pass ran at every evaluation with it and never without."""
    from tsallis.core import discrete as core
    from tsallis.core import tuning

    passes = []
    replace = core._xs.replace_at_most

    def counted(x, limit, value):
        passes.append(tuning.EXP2_BAND)
        return replace(x, limit, value)

    monkeypatch.setattr(core._xs, "replace_at_most", counted)
    generator = torch.Generator().manual_seed(5)
    for spread in (1.0, 0.3):
        x = spread * torch.randn(256, 1000, generator=generator)
        x[:8, ::5] = float("-inf")
        w = torch.randn(256, 1000, generator=generator)
        results = []
        for band in (True, False):
            monkeypatch.setattr(tuning, "EXP2_BAND", band)
            v = x.clone().requires_grad_()
            p = entmax(v, alpha)
            (p * w).sum().backward()
            results.append((p.detach(), v.grad))
        assert torch.equal(results[0][0], results[1][0]), (alpha, spread)
        assert torch.equal(results[0][1], results[1][1]), (alpha, spread)
    assert passes and all(passes), alpha
    assert not core._slow_exp2_band(torch.zeros(1, dtype=F64), -1022 * 1.5, -1022.0)
    assert not core._slow_exp2_band(torch.zeros(1), -126 * 7 / 3, -126.0)  # alpha = 1.3: below


@pytest.mark.parametrize(
    ("shape", "sigma", "alpha", "taken"),
    [
        ((256, 1000), 1.0, 1.3, True),  # middling spread (0.96): the prefix start
        ((256, 1000), 0.3, 1.3, False),  # narrow: supports of 74%, wider than the prefix
        ((256, 1000), 4.0, 1.3, False),  # wide: a few entries, which the loop narrows to
        ((256, 1000), 0.5, 1.35, False),
        ((8, 16384), 0.3, 1.3, True),  # long narrow rows: 22% supports, the prefix holds
        ((256, 1000), 0.3, 1.7, True),  # (not gated above tuning.GROUPED_TENSOR_ALPHA)
    ],
)
def test_prefix_start_gated_by_the_spread(shape, sigma, alpha, taken, monkeypatch):
    """At alphas from 1.25 to 1.36 a CPU tensor takes the prefix start (_prefix_map) only
    on rows of middling median spread (tuning.PREFIX_ROOTED_SPREAD; narrow ones only
    from tuning.PREFIX_ROOTED_LONG entries), with the partition forced to pay; the map
    is the same either way (float32 within 1e-6 of float64)."""
    from tsallis.core import discrete as core
    from tsallis.core import tuning

    monkeypatch.setattr(tuning, "PARTITION_PAYS", True)
    calls = []
    original = core._prefix_map

    def recorded(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(core, "_prefix_map", recorded)
    z = sigma * torch.randn(shape, generator=torch.Generator().manual_seed(5))
    p = entmax(z, alpha)
    assert bool(calls) is taken
    calls.clear()
    assert float((p.double() - entmax(z.double(), alpha)).abs().max()) <= 1e-6


@pytest.mark.parametrize("alpha", [1.5, 2.0])
def test_integer_scores_with_wide_ties(alpha):
    """Float32 rows of integer scores, most of them tied (992 zeros, 3 ones, 5 minus ones,
    per row in its own order): the support is 995 entries, and at 3/2 the eager loop's
    mass is a sum of 992 equal small squares and 3 large ones. The squared 2-norm that
    formed it was 4.0e-6 relatively off, and p 2.2e-6 off float64; Torch's sum of y * y
    keeps p within the 1e-6 bar (measured 6.8e-7 on such rows)."""
    rng = np.random.default_rng(5)
    row = np.zeros(1000, np.float32)
    row[:3], row[3:8] = 1.0, -1.0
    z = torch.from_numpy(np.stack([rng.permutation(row) for _ in range(600)]))
    p = entmax(z, alpha)  # (600, 1000): the CPU's Newton loop at 3/2, not the sort
    p64 = entmax(z.double(), alpha)
    assert float((p.double() - p64).abs().max()) <= 1e-6
    assert float((p.double().sum(-1) - 1).abs().max()) <= 1e-6
    assert int((p64[0] > 0).sum()) == {1.5: 995, 2.0: 3}[alpha]
