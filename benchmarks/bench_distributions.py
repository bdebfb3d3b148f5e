"""BetaGaussian.log_prob against the published torch beta-Gaussian's approach, side by side.

    python benchmarks/bench_distributions.py [--quick]

The peer follows the approach of the torch beta-Gaussian published with
Martins et al., "Sparse continuous distributions and Fenchel-Young losses"
(JMLR 2022): an eigendecomposition of Sigma at construction, the inverse
square-root factor formed explicitly, the threshold from log-gamma once per
distribution, and log_prob = log of the clipped power of -tau - d^2/2, all in
the input dtype. It is written here from that description (it has no
validation, no NaN policy, and log(0) gives -inf with a NaN gradient outside
the support).

Cases, 3D, alpha = 1.5: a batch of 1024 distributions with one value each, and
one distribution with 100,000 values; log_prob alone (the distribution built
once), construction + log_prob, and construction + log_prob + backward with
loc and Sigma requiring gradients (training). Errors: the largest density error relative
to the peak density, against our float64 on the same (float32-rounded)
inputs. Not a test.
"""

from __future__ import annotations

import argparse
import math

import torch
from timing import interleaved_medians  # benchmarks/ is on the path when run as a script

from torch_bridge import BetaGaussian

ALPHA, DIM = 1.5, 3


class PublishedStyleBetaGaussian:
    """The peer: eigh at construction, explicit Sigma^(-1/2), log of the clipped power."""

    def __init__(self, alpha: float, loc: torch.Tensor, scale: torch.Tensor) -> None:
        self.alpha, self.loc = alpha, loc
        values, vectors = torch.linalg.eigh(scale)
        self.inv_root = vectors * values.rsqrt()[..., None, :]  # U diag(s^-1/2)
        n, am1 = loc.shape[-1], alpha - 1
        ratio = alpha / am1
        log_inner = (
            math.lgamma(n / 2 + ratio)
            - math.lgamma(ratio)
            - n / 2 * math.log(math.pi)
            + (math.log(2) - math.log(am1)) / am1
        )
        log_radius = am1 / (2 + am1 * n) * log_inner
        log_det = torch.log(values).sum(-1)
        self.tau = -torch.exp(2 * log_radius - math.log(2) - log_det / (n + 2 / am1))

    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        diff = (value - self.loc)[..., None]
        white = (self.inv_root.transpose(-2, -1) @ diff)[..., 0]
        half_d2 = white.square().sum(-1) / 2
        inner = torch.clip((self.alpha - 1) * (-self.tau - half_d2), min=0)
        return torch.log(inner ** (1 / (self.alpha - 1)))


def problem(batch: int, values: int, dtype: torch.dtype, seed: int = 0):
    """(loc, Sigma, x): well-conditioned random Sigma, x mostly inside the support."""
    gen = torch.Generator().manual_seed(seed)
    loc = torch.randn(batch, DIM, generator=gen, dtype=torch.float64)
    root = torch.randn(batch, DIM, DIM, generator=gen, dtype=torch.float64) * 0.3
    sigma = root @ root.transpose(-1, -2) + torch.eye(DIM, dtype=torch.float64)
    x = loc + 0.5 * torch.randn(values, batch, DIM, generator=gen, dtype=torch.float64)
    x = x[0] if values == 1 else x[:, 0]
    if values != 1:
        loc, sigma = loc[0], sigma[0]
    return loc.to(dtype), sigma.to(dtype), x.to(dtype)


def largest_error(estimate: torch.Tensor, truth: torch.Tensor, log_mode: torch.Tensor) -> float:
    """Largest |p - p64| / p64(mode): the density's error, relative to its peak.

    (The error of log p itself grows without bound at the support's edge, for
    any implementation, as log p goes to -inf.)
    """
    gap = (estimate.double().exp() - truth.exp()) / log_mode.exp()
    return float(gap.abs().max())


def one_case(batch: int, values: int, repeat: int) -> None:
    """Print the timings and float32 errors of one (batch, values) case."""
    loc, sigma, x = problem(batch, values, torch.float32)
    ours = BetaGaussian(ALPHA, loc, sigma, validate_args=False)
    peer = PublishedStyleBetaGaussian(ALPHA, loc, sigma)
    # each pair is interleaved on its own: a heavy call (construction) slows the call
    # that follows it, so mixing the pairs would tax whichever log_prob runs next
    t = interleaved_medians(
        {"ours": lambda: ours.log_prob(x), "peer": lambda: peer.log_prob(x)}, repeat
    )
    t |= interleaved_medians(
        {
            "ours built": lambda: BetaGaussian(ALPHA, loc, sigma, validate_args=False).log_prob(x),
            "peer built": lambda: PublishedStyleBetaGaussian(ALPHA, loc, sigma).log_prob(x),
        },
        repeat,
    )
    # training: loc and Sigma need gradients (our small-call NumPy route is then off)
    loc_g, sigma_g = loc.clone().requires_grad_(), sigma.clone().requires_grad_()
    t |= interleaved_medians(
        {
            "ours grad": lambda: (
                BetaGaussian(ALPHA, loc_g, sigma_g, validate_args=False)
                .log_prob(x)
                .sum()
                .backward()
            ),
            "peer grad": lambda: (
                PublishedStyleBetaGaussian(ALPHA, loc_g, sigma_g).log_prob(x).sum().backward()
            ),
        },
        repeat,
    )
    label = f"{batch} distributions x {values} value{'s' if values > 1 else ''}"
    for name, (a, b) in {
        "log_prob": ("ours", "peer"),
        "build + log_prob": ("ours built", "peer built"),
        "build + log_prob + backward": ("ours grad", "peer grad"),
    }.items():
        print(f"{label + ', ' + name:<58} {t[a] * 1e6:9.1f} {t[b] * 1e6:9.1f} {t[a] / t[b]:10.2f}")
    # the float32 inputs themselves, in float64: the error is the op's, not the rounding's
    exact = BetaGaussian(ALPHA, loc.double(), sigma.double())
    truth, mode = exact.log_prob(x.double()), exact.log_prob(exact.loc)
    print(
        "  float32 density error / peak density:"
        f" ours {largest_error(ours.log_prob(x), truth, mode):.1e},"
        f" peer {largest_error(peer.log_prob(x), truth, mode):.1e}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    repeat = 31 if parser.parse_args().quick else 201
    print(f"torch {torch.__version__}, CPU, {torch.get_num_threads()} threads, float32, 3D")
    print(f"{'case':<58} {'ours us':>9} {'peer us':>9} {'ours/peer':>10}")
    one_case(1024, 1, repeat)
    one_case(1, 100_000, max(5, repeat // 10))


if __name__ == "__main__":
    main()
