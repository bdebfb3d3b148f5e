"""torch_bridge.BetaGaussian against tsallis.distributions and scipy; sampling; natural
parameters; gradients; bad input."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

torch = pytest.importorskip("torch")

from torch_bridge import BetaGaussian, loc_scale_from_natural  # noqa: E402
from tsallis.distributions import BetaGaussian as NumpyBetaGaussian  # noqa: E402

F64 = torch.float64
ALPHAS = (1.01, 1.25, 1.5, 2.0, 3.0, 5.0)


@pytest.mark.parametrize("alpha", ALPHAS)
def test_matches_numpy_family_1d(alpha):
    loc, scale = np.array([0.3, -1.0, 2.0]), np.array([0.5, 2.0, 1e-3])
    d = BetaGaussian(alpha, torch.tensor(loc), torch.tensor(scale))
    ref = NumpyBetaGaussian(alpha, loc, scale)
    x = loc + np.array([0.1, -0.7, 2e-4])
    np.testing.assert_allclose(d.log_prob(torch.tensor(x)).numpy(), ref.logpdf(x), rtol=1e-12)
    np.testing.assert_allclose(d.variance.numpy(), ref.var(), rtol=1e-13)
    np.testing.assert_allclose(d.entropy().numpy(), ref.tsallis_entropy(), rtol=1e-12)
    a = d.half_width.numpy()
    lo, hi = d.support.lower_bound.numpy(), d.support.upper_bound.numpy()
    # loc -+ a are rounded: a few ulps of |loc| + a
    np.testing.assert_allclose(hi - lo, 2 * a, rtol=0, atol=4 * np.finfo(float).eps * (3 + a.max()))
    outside = torch.tensor(loc + 1.01 * a)
    assert torch.isneginf(d.log_prob(outside)).all()  # -inf, not an error


def test_alpha_2_is_the_scaled_beta_law():
    """alpha = 2: (t - loc)/a + 1)/2 ~ Beta(2, 2); compare with scipy.stats.beta."""
    d = BetaGaussian(2.0, torch.tensor(0.4, dtype=F64), torch.tensor(0.7, dtype=F64))
    a = float(d.half_width)
    t = np.linspace(0.4 - 0.9 * a, 0.4 + 0.9 * a, 9)
    ref = stats.beta(2, 2, loc=0.4 - a, scale=2 * a).logpdf(t)
    np.testing.assert_allclose(d.log_prob(torch.tensor(t)).numpy(), ref, rtol=1e-12)


@pytest.mark.parametrize("alpha", (1.25, 2.0, 3.0))
def test_rsample_moments_and_support(alpha):
    """2e5 samples: mean and variance within 5 standard errors; every sample in the support;
    a Kolmogorov-Smirnov test against the CDF integrated from log_prob."""
    torch.manual_seed(0)
    d = BetaGaussian(alpha, torch.tensor([0.3], dtype=F64), torch.tensor([0.5], dtype=F64))
    x = d.rsample((200_000,))[:, 0]
    var = float(d.variance[0])
    assert abs(float(x.mean()) - 0.3) < 5 * (var / x.numel()) ** 0.5
    assert abs(float(x.var()) / var - 1) < 0.02
    a = float(d.half_width[0])
    assert float((x - 0.3).abs().max()) <= a
    grid = torch.linspace(0.3 - a, 0.3 + a, 20001, dtype=F64)
    pdf = d.log_prob(grid[:, None])[:, 0].exp().numpy()
    cdf = np.concatenate([[0], np.cumsum((pdf[1:] + pdf[:-1]) / 2 * np.diff(grid.numpy()))])
    statistic = stats.kstest(x.numpy(), lambda v: np.interp(v, grid.numpy(), cdf)).statistic
    assert statistic < 1.63 / (x.numel() ** 0.5)  # 1% level


def test_one_dimensional_batches_of_any_shape():
    """A (2, 3) batch of 1D beta-Gaussians (loc and sigma (2, 3), or sigma (3,)
    broadcast): batch_shape (2, 3) and the NumPy family's values entry by entry (sigma
    of shape (2, 3) was read as an N-D Sigma for D = 3 and refused); scale ending in a
    D x D matrix matching loc's last dimension stays N-D."""
    gen = torch.Generator().manual_seed(4)
    loc = torch.randn(2, 3, generator=gen, dtype=F64)
    for scale in (
        torch.rand(2, 3, generator=gen, dtype=F64) + 0.5,
        torch.tensor([0.5, 1.0, 2.0], dtype=F64),
    ):
        d = BetaGaussian(1.5, loc, scale)
        assert d.batch_shape == (2, 3) and d.event_shape == ()
        x = loc + 0.3 * torch.rand(2, 3, generator=gen, dtype=F64)
        ref = NumpyBetaGaussian(1.5, loc.numpy(), np.broadcast_to(scale.numpy(), (2, 3)))
        np.testing.assert_allclose(d.log_prob(x).numpy(), ref.logpdf(x.numpy()), rtol=1e-12)
        np.testing.assert_allclose(d.entropy().numpy(), ref.tsallis_entropy(), rtol=1e-12)
        assert d.rsample((5,)).shape == (5, 2, 3)
    sigma = torch.eye(3, dtype=F64) * 0.5
    for shared in (sigma, sigma.expand(2, 3, 3)):
        d = BetaGaussian(1.5, loc, shared)
        assert d.batch_shape == (2,) and d.event_shape == (3,)


def test_multivariate_matches_numpy_and_samples():
    torch.manual_seed(1)
    sigma = np.array([[1.0, 0.3], [0.3, 0.5]])
    for alpha in (1.5, 2.0):
        d = BetaGaussian(alpha, torch.zeros(2, dtype=F64), torch.tensor(sigma))
        ref = NumpyBetaGaussian(alpha, np.zeros(2), sigma)
        y = np.array([[0.2, 0.1], [0.5, -0.4]])
        np.testing.assert_allclose(d.log_prob(torch.tensor(y)).numpy(), ref.logpdf(y), rtol=1e-12)
        np.testing.assert_allclose(d.covariance_matrix.numpy(), ref.cov(), rtol=1e-12)
        x = d.rsample((100_000,))
        np.testing.assert_allclose(torch.cov(x.T).numpy(), ref.cov(), atol=0.02 * ref.cov().max())
        assert torch.isfinite(d.log_prob(x)).all()  # every sample inside the support


def test_rsample_is_reparameterized_and_natural_parameters():
    loc = torch.tensor(0.3, dtype=F64, requires_grad=True)
    scale = torch.tensor(0.5, dtype=F64, requires_grad=True)
    torch.manual_seed(2)
    BetaGaussian(1.5, loc, scale).rsample((1000,)).mean().backward()
    assert float(loc.grad) == pytest.approx(1.0, abs=1e-12)  # d mean(loc + ...) / d loc
    assert torch.isfinite(scale.grad)
    theta1, theta2 = torch.tensor(0.3 / 0.25, dtype=F64), torch.tensor(-1 / 0.5, dtype=F64)
    d = BetaGaussian.from_natural(1.5, theta1, theta2)
    assert float(d.loc) == pytest.approx(0.3, rel=1e-14)
    assert float(d.scale) == pytest.approx(0.5, rel=1e-14)
    assert loc_scale_from_natural(theta1, theta2)[1].item() == pytest.approx(0.5, rel=1e-14)


def test_log_prob_gradcheck_inside_the_support():
    loc = torch.tensor([0.3, -0.1], dtype=F64, requires_grad=True)
    scale = torch.tensor([0.5, 1.2], dtype=F64, requires_grad=True)
    alpha = torch.tensor([1.5, 2.5], dtype=F64, requires_grad=True)
    x = torch.tensor([0.35, 0.2], dtype=F64)
    assert torch.autograd.gradcheck(
        lambda a, m, s: BetaGaussian(a, m, s).log_prob(x), (alpha, loc, scale)
    )


def test_bad_input():
    for kwargs, match in (
        ({"alpha": 1.0, "loc": 0.0, "scale": 1.0}, "alpha"),
        ({"alpha": 0.5, "loc": 0.0, "scale": 1.0}, "alpha"),
        ({"alpha": 2.0, "loc": 0.0, "scale": 0.0}, "scale"),
        ({"alpha": 2.0, "loc": float("nan"), "scale": 1.0}, "loc"),
        ({"alpha": 2.0, "loc": torch.zeros(2), "scale": -torch.eye(2)}, "positive definite"),
    ):
        with pytest.raises(ValueError, match=match):
            BetaGaussian(**kwargs)
    with pytest.raises(ValueError, match="theta2"):
        loc_scale_from_natural(torch.tensor(1.0), torch.tensor(0.5))


# --- validation follows torch.distributions (hardening issue, item 3) ---


def test_asymmetric_or_indefinite_sigma_is_rejected():
    loc = torch.zeros(2, dtype=F64)
    for sigma in ([[1.0, 0.5], [0.2, 1.0]], [[1.0, 2.0], [2.0, 1.0]], [[1e-8, 5e-9], [0.0, 1e-8]]):
        with pytest.raises(ValueError, match=r"scale .*symmetric positive definite"):
            BetaGaussian(1.5, loc, torch.tensor(sigma, dtype=F64))
    tiny = torch.tensor([[1e-8, 3e-9], [3e-9, 1e-8]], dtype=F64)  # symmetric, SPD, tiny entries
    assert BetaGaussian(1.5, loc, tiny).radius > 0
    huge = torch.tensor([[1e8, 3e7], [3e7 + 1e-3, 1e8]], dtype=F64)  # asymmetric by 1e-11 relative
    assert BetaGaussian(1.5, loc, huge).radius > 0


def test_log_prob_nan_policy():
    d = BetaGaussian(1.5, torch.tensor([0.0, 1.0]), torch.tensor([1.0, 2.0]))
    with pytest.raises(ValueError, match="value must not contain NaN"):
        d.log_prob(torch.tensor([float("nan"), 0.0]))
    quiet = BetaGaussian(
        1.5, torch.tensor([0.0, 1.0]), torch.tensor([1.0, 2.0]), validate_args=False
    )
    out = quiet.log_prob(torch.tensor([float("nan"), 0.0]))
    assert torch.isnan(out[0]) and torch.isfinite(out[1])
    d2 = BetaGaussian(2.0, torch.zeros(2), torch.eye(2), validate_args=False)
    out = d2.log_prob(torch.tensor([[float("nan"), 0.0], [0.0, 0.0], [9.0, 9.0]]))
    assert torch.isnan(out[0]) and torch.isfinite(out[1]) and torch.isneginf(out[2])


def test_parameter_errors_name_the_argument():
    with pytest.raises(ValueError, match=r"do not broadcast: alpha \(\), loc \(3,\), scale \(4,\)"):
        BetaGaussian(1.5, torch.zeros(3), torch.ones(4))
    with pytest.raises(ValueError, match=r"alpha \(2,\), loc \(3,\), scale \(\)"):
        BetaGaussian(torch.tensor([1.5, 2.0]), torch.zeros(3, 3), torch.eye(3))
    with pytest.raises(TypeError, match="loc must be a tensor or a real number"):
        BetaGaussian(1.5, "0", 1.0)
    with pytest.raises(TypeError, match="scale must be a real tensor"):
        BetaGaussian(1.5, 0.0, torch.tensor(True))
    with pytest.raises(ValueError, match="parameter loc"):
        BetaGaussian(1.5, torch.tensor([0.0, float("inf")]), torch.ones(2))
    with pytest.raises(ValueError, match="parameter scale"):
        BetaGaussian(1.5, 0.0, float("inf"))
    with pytest.raises(ValueError, match=r"value must have event shape \(2,\)"):
        BetaGaussian(1.5, torch.zeros(2), torch.eye(2)).log_prob(torch.zeros(3))


def test_python_numbers_keep_their_value_and_device():
    d = BetaGaussian(1.01, torch.tensor([0.0], dtype=F64), 1.0)
    assert d.alpha.dtype == F64 and d.alpha.item() == 1.01  # not rounded through float32
    assert BetaGaussian(1.5, 0.0, 1.0).loc.dtype == torch.get_default_dtype()


def test_loc_scale_from_natural_inputs():
    loc, scale = loc_scale_from_natural(1.0, -0.5)
    assert float(loc) == 1.0 and float(scale) == 1.0
    with pytest.raises(ValueError, match=r"-2 theta2 \(the precision Sigma\^-1\) must be positive"):
        loc_scale_from_natural(torch.zeros(2), torch.zeros(2, 2))
    with pytest.raises(ValueError, match="theta1 must be finite"):
        loc_scale_from_natural(torch.tensor([float("nan"), 0.0]), -torch.eye(2))
    with pytest.raises(ValueError, match="theta2 must be finite"):
        loc_scale_from_natural(torch.tensor(0.0), torch.tensor(float("-inf")))
    with pytest.raises(ValueError, match="symmetric"):
        loc_scale_from_natural(torch.zeros(2), torch.tensor([[-1.0, 0.5], [0.0, -1.0]]))
    with pytest.raises(TypeError, match="theta1 must be a tensor or a real number"):
        loc_scale_from_natural("1", -0.5)
    with pytest.raises(ValueError, match="do not broadcast"):
        loc_scale_from_natural(torch.zeros(3), -torch.ones(4))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_rsample(dtype):
    for loc, scale in ((torch.zeros(3), torch.ones(3)), (torch.zeros(2), torch.eye(2))):
        d = BetaGaussian(torch.tensor(1.5, dtype=dtype), loc.to(dtype), scale.to(dtype))
        x = d.rsample((500,))
        assert x.dtype == dtype and torch.isfinite(x).all()
        # every draw lies inside the support (up to the half-precision rounding of x)
        inside = BetaGaussian(1.5, loc, scale).log_prob(x.float() * (1 - 1e-2))
        assert torch.isfinite(inside).all()


@pytest.mark.parametrize("event", [(), (2,)])
def test_empty_batches(event):
    loc = torch.zeros(0, *event, dtype=F64, requires_grad=True)
    scale = torch.ones(0, dtype=F64) if not event else torch.eye(2, dtype=F64).expand(0, 2, 2)
    d = BetaGaussian(1.5, loc, scale)
    assert d.batch_shape == (0,)
    assert d.rsample((3,)).shape == (3, 0, *event)
    assert d.log_prob(torch.zeros(0, *event, dtype=F64)).shape == (0,)
    for value in (d.entropy(), d.variance, d.mean, d.radius, d.covariance_matrix):
        assert value.shape[0] == 0
    d.rsample((2,)).sum().backward()
    assert loc.grad.shape == loc.shape


def test_no_host_reads_without_validation():
    """validate_args=False: construction, log_prob, entropy and rsample run on meta tensors."""
    meta = torch.device("meta")
    for loc, scale in ((torch.zeros(4, device=meta), torch.ones(4, device=meta)),):
        d = BetaGaussian(torch.tensor(1.5, device=meta), loc, scale, validate_args=False)
        assert d.log_prob(torch.zeros(4, device=meta)).shape == (4,)
        assert d.entropy().shape == (4,) and d.variance.shape == (4,)


def test_alpha_keeps_its_precision_with_half_data():
    """alpha = 1 + 1e-6 rounds to 1.0 in float16 (and was refused): a number alpha stays
    float64; every output comes back in the data's dtype."""
    d = BetaGaussian(
        1.000001, torch.zeros(2, dtype=torch.float16), torch.ones(2, dtype=torch.float16)
    )
    assert d.alpha.dtype == F64 and d.alpha[0].item() == 1.000001
    for value in (
        d.rsample((3,)),
        d.log_prob(torch.zeros(2, dtype=torch.float16)),
        d.entropy(),
        d.variance,
    ):
        assert value.dtype == torch.float16 and not torch.isnan(value).any()


def test_validation_survives_torch_compile():
    """torch.compile turns torch's default validate_args off process-wide; ours stays on."""
    torch.compile(lambda x: x * 2, fullgraph=True)(torch.ones(2))
    assert torch.distributions.Distribution._validate_args is False
    with pytest.raises(ValueError, match="parameter scale"):
        BetaGaussian(1.5, 0.0, -1.0)
    torch.distributions.Distribution.set_default_validate_args(True)  # leave torch as found


# --- float32 log_prob: the normalizer once, the bulk in float32 (core issue) ---


def _float32_case(alpha: float, dim: int, size: float, seed: int = 0):
    """(float32 distribution, float64 twin, float32 values inside, u = d^2/R^2 in float64)."""
    gen = torch.Generator().manual_seed(seed)
    batch = 2048
    if dim == 1:
        loc = torch.randn(batch, generator=gen)
        scale = (0.1 + torch.rand(batch, generator=gen)) * size
        exact = BetaGaussian(alpha, loc.double(), scale.double())
        step = 2 * torch.rand(batch, generator=gen, dtype=F64) - 1
        x = (loc.double() + exact.half_width * step).float()
        u = ((x.double() - loc.double()) / exact.half_width) ** 2
        return BetaGaussian(alpha, loc, scale), exact, x, u
    loc = torch.randn(batch, dim, generator=gen)
    root = torch.randn(batch, dim, dim, generator=gen) * 0.3
    sigma = ((root @ root.transpose(-1, -2) + torch.eye(dim)) * size * size).float()
    exact = BetaGaussian(alpha, loc.double(), sigma.double())
    low = torch.linalg.cholesky(sigma.double())
    ray = torch.randn(batch, dim, generator=gen, dtype=F64)
    ray = ray / ray.norm(dim=-1, keepdim=True) * torch.rand(batch, 1, generator=gen, dtype=F64)
    x = (loc.double() + (low @ (ray * exact.radius[:, None])[..., None])[..., 0]).float()
    white = torch.linalg.solve_triangular(low, (x.double() - loc.double())[..., None], upper=False)
    return BetaGaussian(alpha, loc, sigma), exact, x, (white**2).sum((-2, -1)) / exact.radius**2


@pytest.mark.parametrize("alpha", (1.0001, 1.01, 1.5, 2.0, 5.0))
@pytest.mark.parametrize("dim", (1, 3))
@pytest.mark.parametrize("size", (1e-3, 1.0, 1e3))
def test_float32_log_prob_is_backward_stable(alpha, dim, size):
    """float32 log_prob runs log p(mode) + k log1p(-d^2/R^2) in float32, with log p(mode),
    1/R^2 and k from float64. Its error is what a few float32 roundings of d^2 and of the
    result cause: |err| <= C eps32 (1 + |log p| + k u/(1-u)), u = d^2/R^2, whose last
    term is the conditioning of log p on d^2. Measured: C <= 2 in 1D, <= 7.3 in 3D (the
    float32 Cholesky solve); the bound is 16. k log(inner) in float32 would be off by
    about k eps32 near the mode: C ~ 1e4 at alpha = 1.0001."""
    d32, d64, x, u = _float32_case(alpha, dim, size)
    got, truth = d32.log_prob(x).double(), d64.log_prob(x.double())
    inside = u < 1
    assert inside.float().mean() > 0.99
    k = 1 / (alpha - 1)
    unit = torch.finfo(torch.float32).eps * (1 + truth.abs() + k * u / (1 - u))
    assert ((got - truth).abs() / unit)[inside].max() <= 16
    assert d32.log_prob(x).dtype == torch.float32


def test_log_prob_graphs_are_not_shared_when_parameters_need_grad():
    """The normalizer is cached only without gradients: two log_probs of one distribution
    with a trainable scale each backpropagate (as with torch's Normal)."""
    scale = torch.tensor([0.5, 2.0], dtype=F64, requires_grad=True)
    d = BetaGaussian(1.5, torch.zeros(2, dtype=F64), scale)
    x = torch.tensor([0.1, -0.3], dtype=F64)
    d.log_prob(x).sum().backward()
    first = scale.grad.clone()
    d.log_prob(x).sum().backward()
    torch.testing.assert_close(scale.grad, 2 * first, rtol=1e-15, atol=0)
    frozen = BetaGaussian(1.5, torch.zeros(2, dtype=F64), scale.detach())
    frozen.log_prob(x)
    cached = frozen._radial()
    assert all(a is b for a, b in zip(cached, frozen._radial(), strict=True))


@pytest.mark.parametrize("dtype", (torch.float32, F64))
@pytest.mark.parametrize("dim", (1, 3))
def test_small_calls_on_numpy_agree_with_torch(dtype, dim):
    """Small CPU log_probs without gradients run the same arithmetic on NumPy; a value
    that requires grad takes the Torch route. They round apart (Torch's addcmul fuses a
    multiply-subtract; the libraries' log1p differ): measured at most 2.7 eps (float64)
    and 1.4 eps (float32) times (1 + |log p|); bar 8 eps."""
    gen = torch.Generator().manual_seed(3)
    loc = torch.randn(64, dim, generator=gen, dtype=F64)
    root = 0.3 * torch.randn(64, dim, dim, generator=gen, dtype=F64)
    sigma = root @ root.transpose(-1, -2) + torch.eye(dim, dtype=F64)
    x = loc + 0.6 * torch.randn(64, dim, generator=gen, dtype=F64)
    if dim == 1:
        loc, sigma, x = loc[:, 0], sigma[:, 0, 0].sqrt(), x[:, 0]
    d = BetaGaussian(1.5, loc.to(dtype), sigma.to(dtype), validate_args=False)
    value = x.to(dtype)
    assert d._on_host(value) and not d._on_host(value.clone().requires_grad_())
    host, device = d.log_prob(value), d.log_prob(value.clone().requires_grad_()).detach()
    finite = torch.isfinite(device)
    assert finite.float().mean() > 0.8 and torch.equal(finite, torch.isfinite(host))
    gap = (host - device)[finite].abs() / (1 + device[finite].abs())
    assert gap.max() <= 8 * torch.finfo(dtype).eps


@pytest.mark.parametrize("grad", (False, True))
def test_infinite_values_are_outside_not_nan(grad):
    """With a diagonal Sigma, forward substitution of (inf, 0, 0) meets 0 * inf = NaN; an
    infinite value is still outside the support (-inf), a NaN anywhere still gives NaN,
    and the gradient outside the support is 0 (not NaN), on both routes."""
    loc = torch.zeros(3, dtype=F64, requires_grad=grad)
    d = BetaGaussian(1.5, loc, torch.eye(3, dtype=F64), validate_args=False)
    inf, nan = float("inf"), float("nan")
    value = torch.tensor(
        [[inf, 0.0, 0.0], [0.0, -inf, 0.0], [inf, -inf, 5.0], [nan, inf, 0.0], [9.0, 0.0, 0.0]],
        dtype=F64,
    )
    assert d._on_host(value) != grad
    out = d.log_prob(value)
    assert torch.isneginf(out[[0, 1, 2, 4]]).all() and torch.isnan(out[3])
    if grad:
        out[[0, 1, 2, 4]].sum().backward()
        assert torch.equal(loc.grad, torch.zeros(3, dtype=F64))


@pytest.mark.parametrize("grad", (False, True))
def test_infinite_values_are_outside_not_nan_1d(grad):
    """1D: an infinite value is -inf with a zero gradient (z * z of inf would make 0 * inf)."""
    loc = torch.zeros(4, dtype=F64, requires_grad=grad)
    d = BetaGaussian(2.0, loc, torch.ones(4, dtype=F64), validate_args=False)
    out = d.log_prob(torch.tensor([float("inf"), -float("inf"), float("nan"), 9.0], dtype=F64))
    assert torch.isneginf(out[[0, 1, 3]]).all() and torch.isnan(out[2])
    if grad:
        out[[0, 1, 3]].sum().backward()
        assert torch.equal(loc.grad, torch.zeros(4, dtype=F64))


def test_no_grad_call_does_not_freeze_the_normalizer():
    """A log_prob under torch.no_grad must not cache the normalizer of a trainable
    distribution: the next backward would miss its gradient (it did before 2026-11-24:
    0.083 instead of -1.534 for d/d scale)."""
    scale = torch.tensor([0.5, 2.0], dtype=F64, requires_grad=True)
    x = torch.tensor([0.1, -0.3], dtype=F64)
    BetaGaussian(1.5, torch.zeros(2, dtype=F64), scale).log_prob(x).sum().backward()
    fresh, scale.grad = scale.grad.clone(), None
    d = BetaGaussian(1.5, torch.zeros(2, dtype=F64), scale)
    with torch.no_grad():
        d.log_prob(x)
    d.log_prob(x).sum().backward()
    torch.testing.assert_close(scale.grad, fresh, rtol=1e-15, atol=0)
