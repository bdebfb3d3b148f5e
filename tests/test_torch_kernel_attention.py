"""torch_bridge kernel attention (Moreno 2022 Alg 1) against mpmath and tsallis.kernels;
gradcheck, the Leibniz rule against finite differences, log space, bad input."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

torch = pytest.importorskip("torch")

from peak_memory import peak_mb  # noqa: E402
from test_kernels import _truth  # noqa: E402

from torch_bridge import GaussianRBF, KernelAttention, kernel_attention  # noqa: E402
from tsallis.kernels import GaussianBase, KernelFamily, UniformBase  # noqa: E402

F64 = torch.float64
INDUCING = np.linspace(0, 1, 12)
MU, SD = np.linspace(0, 1, 8), np.full(8, 0.05)


def _basis(dtype=F64, requires_grad=False):
    return GaussianRBF(
        torch.tensor(MU, dtype=dtype, requires_grad=requires_grad),
        torch.tensor(SD, dtype=dtype, requires_grad=requires_grad),
    )


def _gamma(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=INDUCING.size) * 2


@pytest.mark.parametrize("kernel", ["gaussian", "laplace"])
@pytest.mark.parametrize("alpha", [1.0, 1.5, 2.0, 3.0])
@pytest.mark.parametrize("base", [UniformBase(), GaussianBase(3.0, 0.2)], ids=["uniform", "far"])
def test_matches_mpmath(kernel, alpha, base):
    """E_p[psi_j] within 1e-12 (relative to the largest) of 30-digit mpmath, split at kinks
    and support edges; the Gaussian base sits 10 std outside [0, 1] (log space)."""
    rbf = [lambda t, m=m, s=s: mp.npdf(t, m, s) for m, s in zip(MU, SD, strict=True)]
    gamma = _gamma(0)
    family = KernelFamily(gamma, INDUCING, alpha=alpha, kernel=kernel, bandwidth=0.1, base=base)
    _, expected = _truth(family, rbf, dps=30)
    truth = np.array([float(v) for v in expected])
    got = kernel_attention(
        torch.tensor(gamma), torch.tensor(INDUCING), _basis(), alpha, kernel, 0.1, base
    ).numpy()
    assert np.abs(got - truth).max() <= 1e-12 * np.abs(truth).max()


def test_matches_numpy_reference_batched():
    """A batch of rows equals tsallis.kernels row by row (1e-12), float32 to 1e-6: both faces
    run tsallis.core.kernel, so this checks the batching and the float32 path (accuracy
    is checked against mpmath and an adaptive rule elsewhere)."""
    gammas = np.stack([_gamma(s) for s in range(6)])
    for kernel, alpha in (("gaussian", 2.0), ("laplace", 1.5), ("gaussian", 1.0)):
        got = kernel_attention(
            torch.tensor(gammas), torch.tensor(INDUCING), _basis(), alpha, kernel, 0.1
        ).numpy()
        got32 = kernel_attention(
            torch.tensor(gammas, dtype=torch.float32),
            torch.tensor(INDUCING, dtype=torch.float32),
            _basis(torch.float32),
            alpha,
            kernel,
            0.1,
        )
        assert got32.dtype == torch.float32
        for i, gamma in enumerate(gammas):
            gamma32 = gamma.astype(np.float32).astype(np.float64)
            ind32 = INDUCING.astype(np.float32).astype(np.float64)
            ref = KernelFamily(gamma, INDUCING, alpha=alpha, kernel=kernel, bandwidth=0.1)
            ref32 = KernelFamily(gamma32, ind32, alpha=alpha, kernel=kernel, bandwidth=0.1)
            expected = ref.expect_rbf(MU, SD)
            assert np.abs(got[i] - expected).max() <= 1e-12 * np.abs(expected).max()
            expected32 = ref32.expect_rbf(MU.astype(np.float32), SD.astype(np.float32))
            error32 = np.abs(got32[i].double().numpy() - expected32).max()
            assert error32 <= 1e-6 * np.abs(expected32).max()


@pytest.mark.parametrize("kernel", ["gaussian", "laplace"])
@pytest.mark.parametrize("alpha", [1.0, 2.0, 1.5, 3.0])
def test_gradcheck(kernel, alpha):
    gamma = torch.tensor(np.stack([_gamma(1), _gamma(2)]), requires_grad=True)
    inducing = torch.tensor(INDUCING + 0.013, requires_grad=True)
    mu = torch.tensor(MU[:4], requires_grad=True)
    # Widths away from a panel-count threshold: the panels (min(bandwidth, widths) wide)
    # must not change under gradcheck's perturbation.
    sd = torch.tensor([0.07, 0.12, 0.09, 0.2], dtype=F64, requires_grad=True)

    def f(gamma, inducing, mu, sd):
        return kernel_attention(gamma, inducing, GaussianRBF(mu, sd), alpha, kernel, 0.1)

    assert torch.autograd.gradcheck(f, (gamma, inducing, mu, sd), eps=1e-6, atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("alpha", [2.0, 1.5, 3.0])
def test_leibniz_boundary_constant_matches_mpmath_finite_differences(alpha):
    """alpha = 2, 3/2: the support boundaries are constants in the backward pass (the
    integrand vanishes there, Leibniz); alpha = 3: the Gauss-Jacobi nodes follow the
    root's implicit gradient. Either way the autograd gradient equals a central
    difference of the mpmath oracle, whose boundaries are re-solved at every step."""
    gamma0 = _gamma(0)
    index, h = 3, 1e-5
    rbf = [lambda t: mp.npdf(t, mp.mpf("0.55"), mp.mpf("0.05"))]
    basis = GaussianRBF(torch.tensor([0.55], dtype=F64), torch.tensor([0.05], dtype=F64))
    gamma = torch.tensor(gamma0, requires_grad=True)
    kernel_attention(gamma, torch.tensor(INDUCING), basis, alpha, "gaussian", 0.1).sum().backward()

    def value(step: float) -> float:
        shifted = gamma0.copy()
        shifted[index] += step
        family = KernelFamily(shifted, INDUCING, alpha=alpha, bandwidth=0.1)
        return float(_truth(family, rbf, dps=30)[1][0])

    numeric = (value(h) - value(-h)) / (2 * h)
    assert float(gamma.grad[index]) == pytest.approx(numeric, rel=1e-7, abs=1e-9)
    assert family_has_boundary(gamma0, alpha)


def family_has_boundary(gamma, alpha) -> bool:
    """The case tested above does move a support boundary."""
    family = KernelFamily(gamma, INDUCING, alpha=alpha, bandwidth=0.1)
    return len(family.support_edges) > 0


@pytest.mark.parametrize("mean", [6.0, -5.0])
@pytest.mark.parametrize("alpha", [1.0, 2.0])
def test_gaussian_base_far_away_stays_finite(mean, alpha):
    """A Gaussian base 50 std from [0, 1]: Z scaled in log space, no 0/0, finite gradients."""
    base = GaussianBase(mean, 0.1)
    gamma = torch.tensor([[1.0, 2.0]], dtype=F64, requires_grad=True)
    out = kernel_attention(gamma, torch.tensor([0.3, 0.6], dtype=F64), _basis(), alpha, base=base)
    out.sum().backward()
    assert torch.isfinite(out).all() and torch.isfinite(gamma.grad).all()
    family = KernelFamily([1.0, 2.0], [0.3, 0.6], alpha=alpha, base=base)
    expected = family.expect_rbf(MU, SD)
    assert np.abs(out[0].detach().numpy() - expected).max() <= 1e-10 * np.abs(expected).max()


def test_module_and_reentrancy():
    layer = KernelAttention(torch.tensor(INDUCING), _basis(), alpha=2.0, bandwidth=0.1)
    values = torch.randn(3, 4, 8, dtype=F64)
    a = torch.tensor(np.stack([_gamma(s) for s in range(3)]), requires_grad=True)
    b = torch.tensor(np.stack([_gamma(s) for s in range(3, 6)]), requires_grad=True)
    out_a, out_b = layer(a, values), layer(b, values)
    assert out_a.shape == (3, 4)
    (out_a.sum() + out_b.sum()).backward()
    fresh = a.detach().clone().requires_grad_(True)
    layer(fresh, values).sum().backward()
    assert torch.equal(fresh.grad, a.grad)


def test_bad_input_names_the_argument():
    basis, ind = _basis(), torch.tensor(INDUCING)
    gamma = torch.zeros(12, dtype=F64)
    cases = [
        (lambda: kernel_attention(gamma[:5], ind, basis), ValueError, "gamma"),
        (lambda: kernel_attention(gamma, ind, basis, alpha=0.5), ValueError, "alpha"),
        (lambda: kernel_attention(gamma, ind, basis, kernel="cauchy"), ValueError, "kernel"),
        (lambda: kernel_attention(gamma, ind, basis, bandwidth=0.0), ValueError, "bandwidth"),
        (lambda: kernel_attention(gamma.float(), ind, basis), ValueError, "inducing"),
        (lambda: kernel_attention(gamma + math.nan, ind, basis), ValueError, "gamma"),
        (lambda: kernel_attention(gamma - 100, ind, basis, alpha=2.0), ValueError, "no mass"),
        (lambda: kernel_attention(gamma, ind, basis, base="uniform"), TypeError, "base"),
    ]
    for call, error, match in cases:
        with pytest.raises(error, match=match):
            call()


# --- hardening: empty input, bounded memory, steep gamma, alpha -> 1, near roots ---

import tsallis.core.tuning as tuning  # noqa: E402


@pytest.mark.parametrize("alpha", [1.0, 1.5, 2.0, 3.0])
def test_empty_batch_and_no_inducing_points(alpha):
    basis = _basis(requires_grad=True)
    inducing = torch.tensor(INDUCING, requires_grad=True)
    gamma = torch.zeros(0, 3, INDUCING.size, dtype=F64, requires_grad=True)
    out = kernel_attention(gamma, inducing, basis, alpha)
    assert out.shape == (0, 3, MU.size)
    out.sum().backward()
    assert gamma.grad.shape == gamma.shape and basis.mu.grad is not None
    # M = 0: f~ = 0, so p is the base law and r_j = E_Q[psi_j] (uniform on [0, 1] here)
    none = kernel_attention(
        torch.zeros(2, 0, dtype=F64), torch.zeros(0, dtype=F64), _basis(), alpha
    )
    with mp.workdps(30):
        expected = [
            float(mp.ncdf((1 - m) / s) - mp.ncdf(-m / s)) for m, s in zip(MU, SD, strict=True)
        ]
    assert np.abs(none.numpy() - expected).max() <= 1e-14


def test_chunks_do_not_change_values_or_gradients(monkeypatch):
    """Many chunks (checkpointed) give the one-chunk result, values and gradients, to 1e-14."""
    gamma = torch.tensor(np.stack([_gamma(s) for s in range(3)]), requires_grad=True)
    inducing = torch.tensor(INDUCING)
    results = []
    for elements, keep in ((1 << 22, 1 << 40), (2000, 0)):  # one chunk; one panel a chunk
        monkeypatch.setattr(tuning, "KERNEL_CHUNK", elements)
        monkeypatch.setattr(tuning, "KERNEL_KEEP", keep)  # 0: every chunk checkpointed
        gamma.grad = None
        for alpha in (1.0, 3.0):
            out = kernel_attention(gamma, inducing, _basis(), alpha, "laplace", 0.1)
            (out * torch.arange(MU.size, dtype=F64)).sum().backward()
        results.append((out.detach().clone(), gamma.grad.clone()))
    (r1, g1), (r2, g2) = results
    assert torch.allclose(r1, r2, rtol=0, atol=1e-14 * r1.abs().max())
    assert torch.allclose(g1, g2, rtol=0, atol=1e-13 * g1.abs().max())


@pytest.mark.parametrize(
    ("kernel", "alpha"), [("gaussian", 1.0), ("gaussian", 1.5), ("gaussian", 2.0), ("laplace", 2.0)]
)
def test_kernel_band_changes_nothing(monkeypatch, kernel, alpha):
    """Inducing points out of a chunk's reach (their float64 kernel is exactly 0 there) are
    left out of it: values and gradients as with every point in every chunk, to the
    rounding of the sums (1e-14 of the largest; gamma, the inducing points, the basis)."""
    gen = torch.Generator().manual_seed(2)
    inducing = torch.linspace(0, 1, 200, dtype=F64, requires_grad=True)
    gamma = (torch.randn(4, 200, generator=gen, dtype=F64) * 0.5).requires_grad_()
    # reach (exactly-0 kernel beyond): 0.15 for both, so most chunks drop most points
    bandwidth = 0.004 if kernel == "gaussian" else 2e-4
    basis = _basis(requires_grad=True)
    weights = torch.randn(4, MU.size, generator=gen, dtype=F64)
    monkeypatch.setattr(tuning, "KERNEL_CHUNK", 1 << 16)  # many chunks, each a band
    results = []
    for underflow in (tuning.KERNEL_UNDERFLOW, 1e12):  # banded; every point everywhere
        monkeypatch.setattr(tuning, "KERNEL_UNDERFLOW", underflow)
        out = kernel_attention(gamma, inducing, basis, alpha, kernel, bandwidth)
        grads = torch.autograd.grad((out * weights).sum(), (gamma, inducing, basis.mu))
        results.append((out.detach(), *grads))
    for banded, full in zip(*results, strict=True):
        assert (banded - full).abs().max() <= 1e-14 * full.abs().max()


def test_tiny_bandwidth_is_refused_with_a_working_value():
    gamma = torch.tensor(_gamma(0))[None]
    with pytest.raises(ValueError, match=r"use a bandwidth of at least 1\.5\de-05"):
        kernel_attention(gamma, torch.tensor(INDUCING), _basis(), 2.0, bandwidth=1e-6)
    narrow = GaussianRBF(torch.tensor(MU), torch.full((MU.size,), 1e-7, dtype=F64))
    with pytest.raises(ValueError, match="follows the RBF width 1e-07"):
        kernel_attention(gamma, torch.tensor(INDUCING), narrow, 2.0)


def test_small_bandwidth_runs_in_bounded_memory():
    """bandwidth 1e-4 on [0, 1] (10^4 panels, 1.6e5 nodes) with gradients, in a subprocess:
    peak memory stays below 700 MB (it was >2.5 GiB at 1e-6 before chunking)."""
    code = (
        "import torch\n"
        "from torch_bridge import GaussianRBF, kernel_attention\n"
        "b = GaussianRBF(torch.linspace(0, 1, 8, dtype=torch.float64),"
        " torch.full((8,), 0.1, dtype=torch.float64))\n"
        "g = torch.randn(16, 10, dtype=torch.float64, requires_grad=True)\n"
        "r = kernel_attention(g, torch.linspace(0, 1, 10, dtype=torch.float64), b, 2.0,"
        " bandwidth=1e-4)\n"
        "r.sum().backward()\n"
        "assert torch.isfinite(g.grad).all()\n"
    )
    assert peak_mb(code, timeout=600) < 700


@pytest.mark.parametrize("kernel", ["gaussian", "laplace"])
def test_steep_gamma_matches_the_refined_reference(kernel):
    """gamma of size 1000: panels shrink with the envelope (was 1e-3 off for Laplace)."""
    for seed in range(2):
        gamma = np.random.default_rng(seed).standard_normal(INDUCING.size) * 1000
        for alpha in (1.0, 2.0):
            got = kernel_attention(
                torch.tensor(gamma)[None], torch.tensor(INDUCING), _basis(), alpha, kernel, 0.1
            )[0].numpy()
            expected = _adaptive_reference(gamma, alpha, kernel)
            assert np.abs(got - expected).max() <= 1e-12 * np.abs(expected).max()


def _adaptive_reference(gamma: np.ndarray, alpha: float, kernel: str) -> np.ndarray:
    """E_p[psi_j] by an independent rule: tsallis.quadrature.KinkAware (support pieces by
    brentq, split at the Laplace kinks) refined adaptively to 1e-14, uniform base on [0, 1]
    (the kernel families themselves run the panels of tsallis.core.kernel)."""
    from scipy.special import logsumexp

    from tsallis._generated import deformed
    from tsallis.kernels import kernel_sum
    from tsallis.quadrature import KinkAware

    def f(t):
        return kernel_sum(t, gamma, INDUCING, kernel, 0.1)

    def log_e(t):
        with np.errstate(divide="ignore"):
            return deformed.log_exp_beta(f(t), 2 - alpha)

    kinks = list(INDUCING) if kernel == "laplace" else []
    rule = KinkAware.deformed(f, alpha, 0.0, 1.0, breakpoints=kinks)
    shift = float(np.max(log_e(np.linspace(0, 1, 2049))))
    rule.refine(lambda t: np.exp(log_e(t) - shift), 64)
    x, w = rule.nodes_weights(64)
    log_mass = log_e(x) + np.log(w)
    mass = np.exp(log_mass - logsumexp(log_mass))
    psi = np.exp(-((x[None, :] - MU[:, None]) ** 2) / (2 * SD[:, None] ** 2))
    return psi / (np.sqrt(2 * np.pi) * SD[:, None]) @ mass


@pytest.mark.parametrize(("alpha", "seed"), [(5.0, 12), (3.0, 5)])
def test_roots_just_outside_a_panel(alpha, seed):
    """A support boundary just beyond a panel end made plain Gauss-Legendre on that panel
    1.8e-7 (alpha = 5, seed 12) and 1.0e-9 (alpha = 3, seed 5) off; graded pieces bring
    the rows within 1e-12 of 20-digit mpmath."""
    rbf = [lambda t, m=m, s=s: mp.npdf(t, m, s) for m, s in zip(MU, SD, strict=True)]
    gamma = np.random.default_rng(seed).standard_normal(INDUCING.size) * 3
    family = KernelFamily(gamma, INDUCING, alpha=alpha, bandwidth=0.1)
    truth = np.array([float(v) for v in _truth(family, rbf, dps=20)[1]])
    got = kernel_attention(
        torch.tensor(gamma)[None], torch.tensor(INDUCING), _basis(), alpha, bandwidth=0.1
    )[0].numpy()
    assert np.abs(got - truth).max() <= 1e-12 * np.abs(truth).max()


_NEAR_ONE = [(gap, scale) for gap in (1e-2, 1e-3, 1e-4, 1e-6) for scale in (2.0, 200.0)]
_NEAR_ONE_FAST = [(1e-6, 200.0), (1e-2, 2.0)]


@pytest.mark.parametrize(
    ("gap", "scale"),
    [
        pytest.param(*case, marks=() if case in _NEAR_ONE_FAST else pytest.mark.slow)
        for case in _NEAR_ONE
    ],
)
def test_alpha_close_to_one_matches_mpmath(gap, scale):
    """alpha = 1 + gap within 1e-10 of 20-digit mpmath, for moderate and large gamma
    (alpha = 1.0001 and 1.0005 gave NaN; large gamma was 4e-4 off). Three RBFs (the
    ends and the middle of the basis) keep the default run short; -m slow runs all 8."""
    pick = [0, MU.size // 2, MU.size - 1]
    rbf = [lambda t, m=MU[j], s=SD[j]: mp.npdf(t, m, s) for j in pick]
    gamma = _gamma(1) * scale
    family = KernelFamily(gamma, INDUCING, alpha=1 + gap, bandwidth=0.1)
    truth = np.array([float(v) for v in _truth(family, rbf, dps=20)[1]])
    got = kernel_attention(
        torch.tensor(gamma)[None], torch.tensor(INDUCING), _basis(), 1 + gap, bandwidth=0.1
    )[0].numpy()[pick]
    assert np.abs(got - truth).max() <= 1e-10 * np.abs(truth).max()
    softmax = kernel_attention(
        torch.tensor(gamma)[None], torch.tensor(INDUCING), _basis(), 1.0, bandwidth=0.1
    )[0].numpy()[pick]
    # continuity: the alpha = 1 + gap result moves away from kernel softmax like gap
    assert np.abs(got - softmax).max() <= 50 * scale * gap * np.abs(truth).max()


def test_compile_runs_it_as_a_graph_break():
    """kernel_attention places its panels on the host (documented): under torch.compile
    without fullgraph it runs as a graph break, and value and gradient equal eager mode's
    within 1e-14 (float64)."""
    from torch_bridge import GaussianRBF, kernel_attention

    torch._dynamo.reset()
    basis = GaussianRBF(
        torch.linspace(0, 1, 3, dtype=torch.float64), torch.full((3,), 0.1, dtype=torch.float64)
    )
    gamma = torch.linspace(-1, 1, 10, dtype=torch.float64).reshape(2, 5).requires_grad_(True)
    inducing = torch.linspace(0, 1, 5, dtype=torch.float64)
    weight = torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64)

    def objective(g):
        return (kernel_attention(g, inducing, basis, 1.5) * weight).sum()

    got = torch.compile(objective, backend="aot_eager")(gamma)
    (grad,) = torch.autograd.grad(got, gamma)
    want = objective(gamma)
    (want_grad,) = torch.autograd.grad(want, gamma)
    assert abs(float(got - want)) <= 1e-14
    assert (grad - want_grad).abs().max() <= 1e-14
