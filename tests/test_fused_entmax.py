"""The fixed-step map at the alphas whose powers are roots or whole (tsallis.core.rooted)
and the compiled kernel that hot eager calls take (torch_bridge._fused).

Oracle: the threshold of sum_i [1 + (alpha - 1)(z_i - max - c)]_+^(1/(alpha - 1)) = 1 by
200 bisection steps in float64 (typed here from Martins et al. 2020 eq 3, independent of
the library's Newton loops), on the float32 inputs. Bars: float32 p within 1e-6
absolute (the issue's), its sum within 1e-6; gradients within 1e-5 of the float64
gradient's largest entry (float32 with rows of 512 to 1000 entries).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from torch_bridge import _fused, entmax  # noqa: E402
from tsallis.core import arrays, rooted  # noqa: E402
from tsallis.core import tuning as T  # noqa: E402

ROOTED = [1.25, 9 / 7, 14 / 11, 1.3, 4 / 3, 1.375, 1.4, 10 / 7, 1.5]


def bisected(z: np.ndarray, alpha: float) -> np.ndarray:
    """entmax over the last axis, float64, by bisection on the shift (the oracle)."""
    z = np.asarray(z, dtype=np.float64)
    gap = z - z.max(axis=-1, keepdims=True)
    k = 1 / (alpha - 1)
    lo = np.zeros((*gap.shape[:-1], 1))
    hi = np.full_like(lo, k)  # (at c = 1/(alpha - 1) every entry is 0)
    for _ in range(200):
        mid = (lo + hi) / 2
        mass = (np.maximum(1 + (alpha - 1) * (gap - mid), 0) ** k).sum(axis=-1, keepdims=True)
        lo, hi = np.where(mass > 1, mid, lo), np.where(mass > 1, hi, mid)
    p = np.maximum(1 + (alpha - 1) * (gap - (lo + hi) / 2), 0) ** k
    return p / p.sum(axis=-1, keepdims=True)


def scores(rows: int, size: int, sigma: float, seed: int = 0) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal((rows, size)) * sigma).astype(np.float32)


# --- the cube root -------------------------------------------------------------------


@pytest.mark.parametrize("lib", ["numpy", "torch"])
def test_cube_root_within_two_ulps(lib):
    x = np.geomspace(2.0**-126, 2.0**122, 200_001).astype(np.float32)
    exact = np.cbrt(x.astype(np.float64))
    got = arrays.cube_root(torch.from_numpy(x) if lib == "torch" else x)
    got = np.asarray(got, dtype=np.float64)
    assert np.abs(got / exact - 1).max() <= 2.5e-7  # (2 ulps: measured 2.4e-7)


def test_cube_root_is_float32_only():
    with pytest.raises(TypeError, match="float32"):
        arrays.cube_root(np.ones(3))


# --- the fixed-step map, eager (NumPy and Torch) ---------------------------------------


@pytest.mark.parametrize("alpha", ROOTED)
@pytest.mark.parametrize("lib", ["numpy", "torch"])
def test_rooted_rows_against_bisection(alpha, lib):
    for sigma in (1e-6, 0.1, 1.0, 3.0, 100.0):
        z = scores(64, 1000, sigma, seed=int(sigma * 7) % 5)
        v = torch.from_numpy(z) if lib == "torch" else z
        top = v.max(-1, keepdims=True) if lib == "numpy" else v.amax(-1, keepdim=True)
        p, s, scale, unsettled = rooted.entmax_rows(v, top, alpha, T.FUSED_STEPS)
        p, s, scale, unsettled = (np.asarray(a) for a in (p, s, scale, unsettled))
        want = bisected(z, alpha)
        assert np.abs(p - want).max() <= 1e-6, (alpha, sigma)
        assert np.abs(p.sum(-1) - 1).max() <= 1e-6
        # (at most tuning.STRAGGLERS of the rows, beyond which the Torch face runs its
        # loop on every row; measured: up to 7 of 256 rows at sigma = 3)
        assert unsettled.sum() <= T.STRAGGLERS * 64, (alpha, sigma)
        s_want = want ** (2 - alpha)
        assert np.abs(s - s_want / s_want.sum(-1, keepdims=True)).max() <= 1e-6
        assert np.abs(scale - s_want.sum(-1, keepdims=True)).max() <= 1e-5 * scale.max()


def edge_rows() -> np.ndarray:
    """Seven float32 rows of 600 at the edges, one edge each."""
    z = scores(7, 600, 1.0)
    z[0, 1:] = -np.inf  # one finite entry
    z[1] = 3.0  # constant
    z[2, ::2] = -np.inf
    z[3, :4] = [1e30, -1e30, 1e29, 0.0]  # spread over 1e30
    z[4] = np.round(z[4])  # ties
    z[5] = z[5] * 1e-6 + 1e4  # tiny spread far from 0
    z[6, :3] = 3e38  # (gaps to the others overflow to -inf)
    return z


def test_rooted_rows_at_the_edges():
    alpha = 1.3
    z = edge_rows()
    p, _, _, unsettled = rooted.entmax_rows(z, z.max(-1, keepdims=True), alpha, 3)
    assert not unsettled.any()
    assert np.isfinite(p).all()
    assert np.abs(p - bisected(z, alpha)).max() <= 1e-6
    assert p[0, 0] == 1 and (p[0, 1:] == 0).all()
    assert (p[2, ::2] == 0).all()


def sorted_sparsemax(z: np.ndarray) -> np.ndarray:
    """sparsemax over the last axis, float64, by the sorted threshold (the oracle: typed
    here from Martins and Astudillo 2016, eq. 2 and Algorithm 1)."""
    u = np.asarray(z, dtype=np.float64)
    u = u - u.max(axis=-1, keepdims=True)
    ranked = -np.sort(-u, axis=-1)
    sums = np.cumsum(ranked, axis=-1)
    k = np.arange(1, u.shape[-1] + 1)
    size = (1 + k * ranked > sums).sum(axis=-1, keepdims=True)
    tau = (np.take_along_axis(sums, size - 1, axis=-1) - 1) / size
    return np.maximum(u - tau, 0)


@pytest.mark.parametrize("lib", ["numpy", "torch"])
def test_sparsemax_rows_against_the_sorted_threshold(lib):
    """alpha = 2: the support search settles every row within tuning.FUSED_SUPPORT_STEPS
    (measured: 4 settle sigma 1e-6 to 100; 3 leave up to 50 of 1024 at sigma = 0.3), and
    p is the closed form on it (float32 within 3e-8 of float64, measured; the bar, 2e-7,
    is about two float32 ulps of an entry near 1, below the issue's 1e-6)."""
    for sigma in (1e-6, 1e-3, 0.1, 0.3, 1.0, 3.0, 100.0):
        z = scores(256, 1000, sigma, seed=int(sigma * 10) % 7)
        v = torch.from_numpy(z) if lib == "torch" else z
        top = v.max(-1, keepdims=True) if lib == "numpy" else v.amax(-1, keepdim=True)
        out = rooted.entmax_rows(v, top, 2.0, T.FUSED_SUPPORT_STEPS)
        p, s, scale, unsettled = (np.asarray(a) for a in out)
        want = sorted_sparsemax(z)
        assert not unsettled.any(), sigma
        assert np.abs(p - want).max() <= 2e-7, sigma
        assert np.array_equal(s, (p > 0).astype(np.float32) / scale)
        assert np.array_equal(scale[:, 0], (p > 0).sum(-1))
        assert ((p > 0) == (want > 0))[want > 1e-6].all()
    z = scores(256, 1000, 0.3)
    p, _, _, unsettled = rooted.entmax_rows(z, z.max(-1, keepdims=True), 2.0, 1)
    wrong = np.abs(p - sorted_sparsemax(z)).max(-1) > 1e-6
    assert wrong.any() and (wrong <= unsettled[:, 0]).all()  # (one step: rows marked)


def test_sparsemax_rows_at_the_edges():
    z = edge_rows()
    p, s, scale, unsettled = rooted.entmax_rows(z, z.max(-1, keepdims=True), 2.0, 4)
    assert not unsettled.any()
    assert np.isfinite(p).all() and np.isfinite(s).all()
    assert np.abs(p - sorted_sparsemax(z)).max() <= 2e-7
    assert p[0, 0] == 1 and (p[0, 1:] == 0).all()
    assert np.abs(p[1] - 1 / 600).max() <= 1e-9 and scale[1, 0] == 600
    assert (p[2, ::2] == 0).all() and np.abs(p[6, :3] - 1 / 3).max() <= 1e-7


@pytest.mark.parametrize("alpha", [1.2, 1.31, 1.6, 1.99, 2.01])
def test_rooted_refuses_other_alphas(alpha):
    assert not rooted.rooted(alpha)
    with pytest.raises(TypeError, match="roots"):
        rooted.entmax_rows(np.zeros((2, 3), np.float32), np.zeros((2, 1), np.float32), alpha, 3)


# --- the Torch face's dispatch ---------------------------------------------------------


@pytest.fixture
def fresh(monkeypatch):
    """The dispatch's state emptied, hot from the first call, restored afterwards."""
    monkeypatch.setattr(_fused, "_CALLS", {})
    monkeypatch.setattr(_fused, "_KERNELS", {})
    monkeypatch.setattr(_fused, "_RAN", set())
    monkeypatch.setattr(_fused, "_FAILED", [])
    monkeypatch.setattr(_fused, "_GRAPHS", {})
    monkeypatch.setattr(_fused, "_DIRECT", {})
    monkeypatch.setattr(T, "FUSED_AFTER_CALLS", 0)
    return monkeypatch


@pytest.fixture
def uncompiled(fresh):
    """torch.compile replaced by the function itself: the dispatch around the kernel,
    without a compile's seconds (the compiled kernel has a test of its own)."""
    fresh.setattr(_fused.torch, "compile", lambda function, **options: function)
    return fresh


def forward_backward(x, alpha, dim=-1, mask=None, seed=0):
    x = x.detach().clone().requires_grad_(True)
    p = entmax(x, alpha, dim=dim, mask=mask)
    w = torch.randn(p.shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    (p * w.to(p.dtype)).sum().backward()
    return p.detach().double(), x.grad.double()


def against_float64(x, alpha, dim=-1, mask=None):
    p, grad = forward_backward(x, alpha, dim, mask)
    fused = dict(_fused._KERNELS)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(T, "FUSED_AFTER_CALLS", None)
        p64, grad64 = forward_backward(x.double(), alpha, dim, mask)
    return (
        fused,
        (p - p64).abs().max().item(),
        ((grad - grad64).abs().max() / grad64.abs().max()).item(),
    )


def test_hot_calls_take_the_kernel(uncompiled):
    uncompiled.setattr(T, "FUSED_AFTER_CALLS", 2)
    x = torch.from_numpy(scores(512, 512, 1.0))
    for call in range(3):
        kernels, err, grad_err = against_float64(x, 1.3)
        assert bool(kernels) == (call == 2)
        assert err <= 1e-6 and grad_err <= 1e-5
    assert set(_fused._KERNELS) == {(1.3, 512, True, "cpu")}


def test_unsettled_rows_are_finished_by_the_loop(uncompiled):
    x = torch.from_numpy(scores(512, 512, 2.0))
    for steps, rows_left in ((2, (1, 64)), (1, (65, 512))):  # (a few; more than 1/8)
        uncompiled.setattr(T, "FUSED_STEPS", steps)
        uncompiled.setattr(_fused, "_KERNELS", {})
        top = x.amax(-1, keepdim=True)
        left = int(rooted.entmax_rows(x, top, 1.3, steps)[3].sum())
        assert rows_left[0] <= left <= rows_left[1], left
        kernels, err, grad_err = against_float64(x, 1.3)
        assert kernels and err <= 1e-6 and grad_err <= 1e-5


@pytest.mark.parametrize("alpha", [1.375, 2.0])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_kernel_with_masks_infinities_and_other_dims(uncompiled, dtype, alpha):
    z = scores(600, 512, 2.0)
    z[:, ::7] = -np.inf
    z[3] = -np.inf
    x = torch.from_numpy(z).t().to(dtype)  # rows along dim 0, not contiguous
    mask = torch.from_numpy(np.random.default_rng(1).random((512, 600)) > 0.2)
    kernels, err, grad_err = against_float64(x, alpha, dim=0, mask=mask)
    assert set(kernels) == {(alpha, 512, True, "cpu")}
    tol = 1e-6 if dtype == torch.float32 else 4e-3  # (bfloat16's output rounding: 2^-8)
    assert err <= tol and grad_err <= (1e-5 if dtype == torch.float32 else 1e-2)
    p = entmax(x, alpha, dim=0, mask=mask)
    assert (p[:, 3] == 0).all() and (p[::7] == 0).all() and (p[~mask] == 0).all()


def test_calls_the_kernel_does_not_take(uncompiled):
    x = torch.from_numpy(scores(512, 512, 1.0))
    calls = [
        lambda: entmax(x.double(), 1.3),  # float64
        lambda: entmax(x, 1.6),  # not a rooted alpha
        lambda: entmax(x, torch.full((512, 1), 1.3)),  # a tensor alpha per row
        lambda: entmax(x[:100], 1.3),  # 51,200 values
        lambda: entmax(x[:, :256].contiguous().repeat(4, 1), 1.3),  # rows of 256
    ]
    for call in calls:
        for _ in range(3):
            call()
    assert _fused._KERNELS == {}


def test_a_failed_compile_warns_once_and_the_loop_runs(fresh):
    def broken(function, **options):
        def run(*args):
            raise RuntimeError("no C++ compiler")

        return run

    fresh.setattr(_fused.torch, "compile", broken)
    x = torch.from_numpy(scores(512, 512, 1.0))
    with pytest.warns(RuntimeWarning, match="no C\\+\\+ compiler"):
        _, err, grad_err = against_float64(x, 1.3)
    assert err <= 1e-6 and grad_err <= 1e-5
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _, err, _ = against_float64(x, 1.3)
    assert err <= 1e-6 and len(_fused._FAILED) == 1


def test_the_compiled_kernel(fresh):
    """One real compile (seconds): the compiled kernel against float64, the forward
    alone and with the backward, then other row counts without a recompile."""
    x = torch.from_numpy(scores(512, 512, 1.0, seed=3))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        kernels, err, grad_err = against_float64(x, 1.3)
    assert not [w for w in seen if "Dynamo" in str(w.message)]  # (its notes are ours)
    assert set(kernels) == {(1.3, 512, True, "cpu")}
    assert err <= 1e-6 and grad_err <= 1e-5
    compiled = _fused._KERNELS[1.3, 512, True, "cpu"]
    # later calls run the captured graph without Dynamo (_Direct), at any row count
    direct = _fused._DIRECT[compiled]
    calls = []
    fresh.setattr(direct, "compiled", lambda *a: calls.append(a[0]) or _graph(compiled)(*a))
    for rows in (1024, 777):
        z = scores(rows, 512, 3.0, seed=rows)
        kernels, err, grad_err = against_float64(torch.from_numpy(z), 1.3)
        assert _fused._KERNELS[1.3, 512, True, "cpu"] is compiled
        assert err <= 1e-6 and grad_err <= 1e-5
    assert calls == [1024, 777] and len(_fused._GRAPHS[compiled]) == 1  # (no recompile)
    # and through Dynamo (where no direct call is held) other row counts reuse the graph:
    # its trace fills no cache of the core (arrays.register first; a trace that filled
    # one guarded on its being empty, and every later call recompiled)
    del _fused._DIRECT[compiled]
    for rows in (640, 900):
        _, err, _ = against_float64(torch.from_numpy(scores(rows, 512, 1.0, seed=rows)), 1.3)
        assert err <= 1e-6
    assert len(_fused._GRAPHS[compiled]) == 1
    with torch.no_grad():
        p = entmax(torch.from_numpy(z), 1.3)
    assert (1.3, 512, False, "cpu") in _fused._KERNELS
    assert np.abs(p.double().numpy() - bisected(z, 1.3)).max() <= 1e-6
    # vmap's rule runs the Function's forward on the plain batch: the kernel takes it
    p = torch.func.vmap(lambda row: entmax(row, 1.3))(torch.from_numpy(z))
    assert np.abs(p.double().numpy() - bisected(z, 1.3)).max() <= 1e-6
    assert not _fused._FAILED and math.isfinite(float(p.sum()))


def _graph(kernel):
    """The compiled graph that a kernel's first call captured (_fused._capturing)."""
    return _fused._GRAPHS[kernel][0][0]


def test_the_direct_call_keeps_to_its_guards():
    """_Direct runs its graph only on the compile's device and on row counts whose shape
    guards hold (evaluated once per count); elsewhere the call goes through Dynamo."""
    sympy = pytest.importorskip("sympy")
    rows = sympy.Symbol("s0", integer=True, positive=True)
    seen = []
    direct = _fused._Direct(
        lambda *a: seen.append(a) or a, ("rows", "z"), rows, None, [rows < 100], torch.device("cpu")
    )
    z = torch.zeros(50, 8)
    assert direct.takes(z) and direct(z)[0] == 50 and seen[0][1] is z
    assert not direct.takes(torch.zeros(200, 8)) and direct.counts == {50: True, 200: False}
    assert not direct.takes(torch.zeros(50, 8, device="meta"))


def test_a_graph_whose_guards_fail_goes_through_dynamo(uncompiled):
    x = torch.from_numpy(scores(512, 512, 1.0))
    entmax(x, 1.3)  # (the kernel, uncompiled: nothing captured)
    kernel = _fused._KERNELS[1.3, 512, False, "cpu"]
    assert kernel not in _fused._DIRECT
    refused = _fused._Direct(None, ("z",), None, None, [False], torch.device("cpu"))
    _fused._DIRECT[kernel] = refused
    p = entmax(x, 1.3)
    assert refused.counts == {512: False}
    assert np.abs(p.double().numpy() - bisected(x.numpy(), 1.3)).max() <= 1e-6


def test_sparsemax_takes_the_kernel(uncompiled):
    """alpha = 2 (sparsemax) by the kernel's support search; with one step, the rows it
    leaves unsettled are finished by the eager path."""
    for steps in (T.FUSED_SUPPORT_STEPS, 1):
        uncompiled.setattr(T, "FUSED_SUPPORT_STEPS", steps)
        for sigma in (1e-6, 0.3, 1.0, 100.0):
            x = torch.from_numpy(scores(512, 600, sigma, seed=int(sigma) % 7))
            uncompiled.setattr(_fused, "_KERNELS", {})
            kernels, err, grad_err = against_float64(x, 2.0)
            assert set(kernels) == {(2.0, 600, True, "cpu")}
            assert err <= 1e-6 and grad_err <= 1e-5, (steps, sigma)


def test_the_compiled_sparsemax_kernel(fresh):
    """One real compile at alpha = 2 (Inductor's C++): against float64, forward and
    gradient, and another row count by the direct call."""
    for rows in (512, 900):
        x = torch.from_numpy(scores(rows, 512, 1.0, seed=rows))
        kernels, err, grad_err = against_float64(x, 2.0)
        assert set(kernels) == {(2.0, 512, True, "cpu")}
        assert err <= 1e-6 and grad_err <= 1e-5
    compiled = _fused._KERNELS[2.0, 512, True, "cpu"]
    assert compiled in _fused._DIRECT and len(_fused._GRAPHS[compiled]) == 1
    assert not _fused._FAILED


def test_three_halves_takes_the_kernel(uncompiled):
    """alpha = 3/2 (whole powers: p = y^2, s = y, t = 1 on the support) by the kernel."""
    for sigma in (1e-6, 1.0, 3.0, 100.0):
        x = torch.from_numpy(scores(512, 600, sigma, seed=int(sigma) % 7))
        uncompiled.setattr(_fused, "_KERNELS", {})
        kernels, err, grad_err = against_float64(x, 1.5)
        assert set(kernels) == {(1.5, 600, True, "cpu")}
        assert err <= 1e-6 and grad_err <= 1e-5, sigma


def test_off_the_cpu_a_failed_compile_retries_with_opaque_sums(uncompiled):
    """Off the CPU a kernel whose compile fails is built again with the row sums left
    to Torch's own kernels (arrays.OPAQUE_ROW_SUM), and that one runs."""
    key = (1.3, 512, True, "cuda")
    z = scores(64, 512, 1.0)
    x = torch.from_numpy(z)

    def broken(*args):
        raise RuntimeError("operand does not dominate this use")

    _fused._KERNELS[key] = broken
    p, _, _, check = _fused._first_call(key, broken, x)
    retried = _fused._KERNELS[key]
    assert retried is not broken and retried.__defaults__[-1].fused_sums is False
    assert retried in _fused._RAN and not _fused._FAILED
    assert (check[:, 0] == x.amax(-1)).all() and not check[:, 1].any()
    assert np.abs(p.double().numpy() - bisected(z, 1.3)).max() <= 1e-6


def test_off_the_cpu_both_failures_are_reported(uncompiled):
    key = (1.3, 512, True, "cuda")
    x = torch.from_numpy(scores(64, 512, 1.0))

    def broken(*args):
        raise RuntimeError("operand does not dominate this use")

    uncompiled.setattr(_fused.torch, "compile", lambda function, **options: broken)
    with pytest.warns(RuntimeWarning, match="dominate this use; then RuntimeError"):
        assert _fused._first_call(key, broken, x) is None
    assert len(_fused._FAILED) == 1


def test_the_first_call_leaves_the_callers_tensor_unmarked(uncompiled):
    """The compile marks the rows dynamic on a view, not on the caller's own tensor
    (which a 2-D contiguous float32 input is: a mark there would make its first axis
    dynamic in the caller's own torch.compile)."""
    x = torch.from_numpy(scores(512, 512, 1.0))
    p = entmax(x, 1.3)
    assert (1.3, 512, False, "cpu") in _fused._KERNELS
    assert not hasattr(x, "_dynamo_dynamic_indices")
    assert np.abs(p.double().numpy() - bisected(x.numpy(), 1.3)).max() <= 1e-6


def test_on_the_cpu_a_failed_compile_is_not_retried(uncompiled):
    key = (1.3, 512, True, "cpu")
    x = torch.from_numpy(scores(64, 512, 1.0))

    def broken(*args):
        raise RuntimeError("no C++ compiler")

    _fused._KERNELS[key] = broken
    with pytest.warns(RuntimeWarning, match="no C\\+\\+ compiler"):
        assert _fused._first_call(key, broken, x) is None
    assert _fused._KERNELS[key] is broken and len(_fused._FAILED) == 1


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
@pytest.mark.parametrize("alpha", [1.3, 1.5, 2.0])
def test_cuda_hot_calls_take_the_compiled_kernel(fresh, alpha):
    """On a GPU (Triton): the compiled kernel against float64 on the CPU, forward and
    gradient, at (1024, 1000) and another row count, and rows it leaves unsettled."""
    for rows, sigma in ((1024, 1.0), (300, 3.0), (512, 0.01)):
        z = torch.from_numpy(scores(rows, 1000, sigma, seed=rows))
        x = z.cuda().requires_grad_(True)
        w = torch.randn(z.shape, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
        p = entmax(x, alpha)
        (p * w.cuda().float()).sum().backward()
        z64 = z.double().requires_grad_(True)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(T, "FUSED_AFTER_CALLS", None)
            p64 = entmax(z64, alpha)
            (p64 * w).sum().backward()
        assert (alpha, 1000, True, "cuda") in _fused._KERNELS and not _fused._FAILED
        assert _fused._KERNELS[alpha, 1000, True, "cuda"] in _fused._DIRECT
        assert (p.detach().cpu().double() - p64.detach()).abs().max() <= 1e-6
        err = (x.grad.cpu().double() - z64.grad).abs().max() / z64.grad.abs().max()
        assert err <= 1e-5, (rows, sigma)
    # a contiguous input off the allocator's alignment (one element in): the direct call
    # runs Inductor's wrapper, which copies such inputs for its aligned loads
    z = torch.from_numpy(scores(600, 1000, 1.0, seed=5))
    shifted = torch.empty(600 * 1000 + 1, device="cuda")[1:].view(600, 1000).copy_(z.cuda())
    with torch.no_grad():
        entmax(z.cuda(), alpha)  # (the forward's own kernel, compiled and captured)
        assert _fused._KERNELS[alpha, 1000, False, "cuda"] in _fused._DIRECT
        p = entmax(shifted, alpha)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(T, "FUSED_AFTER_CALLS", None)
            p64 = entmax(z.double(), alpha)
    assert (p.cpu().double() - p64).abs().max() <= 1e-6


def test_hot_calls_check_their_input(uncompiled):
    """The kernel's own check (the row maxima's sum, read with the unsettled rows): NaN
    and +inf raise the eager path's ValueError, a row without a finite entry (masked)
    gives zeros, and the kernel's output for the other rows is the same."""
    z = scores(512, 512, 1.0)
    for bad in (math.nan, math.inf):
        y = z.copy()
        y[7, 3] = bad
        with pytest.raises(ValueError, match="NaN"):
            entmax(torch.from_numpy(y), 1.3)
    mask = torch.ones(512, 512, dtype=torch.bool)
    mask[5] = False
    x = torch.from_numpy(z)
    _, err, grad_err = against_float64(x, 1.3, mask=mask)
    assert err <= 1e-6 and grad_err <= 1e-5
    p = entmax(x, 1.3, mask=mask)
    assert (p[5] == 0).all() and abs(float(p.sum()) - 511) <= 1e-3
    unmasked = entmax(x, 1.3)
    assert set(_fused._KERNELS) == {(1.3, 512, slopes, "cpu") for slopes in (True, False)}
    assert (p[:5] - unmasked[:5]).abs().max() <= 1e-7
