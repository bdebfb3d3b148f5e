"""mpmath ground truth for continuous attention (tests only; no closed form used).

The density is the alpha-entmax of f(t) = -(t - mu)^2 / (2 sigma^2) from its
definition, with the half-width solved from int p = 1 by the Beta integral
typed here as an independent oracle (and checked against root-finding in
tests). rho = int p psi and J = cov_{p,2-alpha}(phi, psi) (eq 17) are
integrated with every integrand divided by its largest sampled value first:
mp.quad's tolerance is absolute, and values near 1e-150 would otherwise be
returned with no correct digits.
"""

from __future__ import annotations

from functools import lru_cache
from itertools import pairwise

import mpmath as mp

DPS = 24


@lru_cache(maxsize=256)
def half_width(alpha: float, sigma: float) -> mp.mpf:
    """a with int [(alpha-1)(a^2 - x^2)/(2 sigma^2)]^k dx = 1, k = 1/(alpha-1)."""
    with mp.workdps(DPS + 10):
        alpha_, sigma_ = mp.mpf(alpha), mp.mpf(sigma)
        k = 1 / (alpha_ - 1)
        beta = mp.beta(mp.mpf(1) / 2, k + 1)
        return ((2 * sigma_**2 / (alpha_ - 1)) ** k / beta) ** (1 / (2 * k + 1))


def robust_quad(f, lo: mp.mpf, hi: mp.mpf, marks: list) -> mp.mpf:
    """int_lo^hi f, split at ``marks`` (and around the sampled peak), scaled to O(1)."""
    grid = [lo + (hi - lo) * i / 128 for i in range(129)]
    grid += [m for m in marks if lo < m < hi]
    values = [abs(f(x)) for x in grid]
    top = max(values)
    if top == 0:
        return mp.mpf(0)
    peak = grid[values.index(top)]
    step = (hi - lo) / 128
    points = {lo, hi, *(m for m in marks if lo < m < hi)}
    points |= {p for p in (peak - 2 * step, peak, peak + 2 * step) if lo < p < hi}
    points = sorted(points)
    fine = []
    for a, b in pairwise(points):
        fine += [a, (a + b) / 2]
    fine.append(points[-1])
    return top * mp.quad(lambda x: f(x) / top, fine)


def rho_jacobian(
    alpha: float, mu: float, sigma: float, mu_j: float, s: float
) -> tuple[mp.mpf, mp.mpf, mp.mpf]:
    """(rho_j, J_1j, J_2j) for one RBF; see ``row``."""
    rho, j1, j2 = row(alpha, mu, sigma, (mu_j,), (s,))
    return rho[0], j1[0], j2[0]


def row(alpha: float, mu: float, sigma: float, mu_j, s_j) -> tuple[list, list, list]:
    """rho_j, J_1j, J_2j for every RBF at 24 digits (theta = [mu/sigma^2, -1/(2 sigma^2)]).

    The escort moments E[t], E[t^2] are integrated once per row.
    """
    with mp.workdps(DPS):
        alpha_, mu_, sigma_ = (mp.mpf(v) for v in (alpha, mu, sigma))
        if alpha == 1:
            lo, hi = -40 * sigma_, 40 * sigma_

            def p(x: mp.mpf) -> mp.mpf:
                return mp.exp(-(x**2) / (2 * sigma_**2)) / (sigma_ * mp.sqrt(2 * mp.pi))

            w = p
        else:
            a = half_width(alpha, sigma)
            k = 1 / (alpha_ - 1)
            coef = ((alpha_ - 1) / (2 * sigma_**2)) ** k
            lo, hi = -a, a

            def p(x: mp.mpf) -> mp.mpf:
                return coef * (a * a - x * x) ** k if abs(x) < a else mp.mpf(0)

            def w(x: mp.mpf) -> mp.mpf:  # p^(2 - alpha), singular at the edges for alpha > 2
                base = coef * (a * a - x * x) ** k if abs(x) < a else mp.mpf(0)
                return base ** (2 - alpha_) if base > 0 else mp.mpf(0)

        zero = [mp.mpf(0)]

        def escort(g, lo_j, hi_j, marks):  # int w g dx
            if alpha <= 2:
                return robust_quad(lambda x: w(x) * g(x), lo_j, hi_j, marks)
            # w is singular at the edges: x = a sin(th) gives w dx = C cos^(2k-1)(th) dth
            factor = coef ** (2 - alpha_) * a ** (2 * k - 1)
            inside = [mp.asin(m / a) for m in marks if abs(m) < a]
            return robust_quad(
                lambda th: factor * mp.cos(th) ** (2 * k - 1) * g(a * mp.sin(th)),
                -mp.pi / 2,
                mp.pi / 2,
                inside,
            )

        norm = escort(lambda x: 1, lo, hi, zero)
        mean_t = mu_ + escort(lambda x: x, lo, hi, zero) / norm
        mean_t2 = escort(lambda x: (mu_ + x) ** 2, lo, hi, zero) / norm
        out: tuple[list, list, list] = ([], [], [])
        for centre, width in zip(mu_j, s_j, strict=True):
            d, s_ = mp.mpf(centre) - mu_, mp.mpf(width)

            def psi(x: mp.mpf, d=d, s_=s_) -> mp.mpf:
                return mp.exp(-((x - d) ** 2) / (2 * s_**2)) / (s_ * mp.sqrt(2 * mp.pi))

            lo_j, hi_j = lo, hi
            marks = [d + j * s_ for j in (-8, -2, 0, 2, 8)] + zero
            if alpha == 1:  # p psi is a Gaussian of this centre and width
                centre = d * sigma_**2 / (sigma_**2 + s_**2)
                spread = sigma_ * s_ / mp.sqrt(sigma_**2 + s_**2)
                lo_j, hi_j = centre - 30 * spread, centre + 30 * spread
                marks = [centre + j * spread for j in (-8, -2, 0, 2, 8)]
            out[0].append(robust_quad(lambda x, psi=psi: p(x) * psi(x), lo_j, hi_j, marks))
            out[1].append(escort(lambda x, psi=psi: (mu_ + x - mean_t) * psi(x), lo_j, hi_j, marks))
            out[2].append(
                escort(lambda x, psi=psi: ((mu_ + x) ** 2 - mean_t2) * psi(x), lo_j, hi_j, marks)
            )
        return out
