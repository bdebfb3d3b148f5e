"""Finite-domain sparse maps: sparsemax, alpha-entmax and ev-softmax.

Sources: Martins 2020 eqs 3, 14, 17-18 (the finite Omega_alpha-RPM) and Chen 2021
eqs 4-12 (evidential softmax and post-hoc evidential sparsification).

The generated kernels are the elementwise closed forms; the reductions
(sorting, prefix sums, row means) are done by the callers. The ``check_*``
functions are the symbolic identities of Chen 2021 and the finite case of
Martins 2020 Prop 3, verified exactly on every support pattern by the tests
(tests/test_discrete.py).
"""

from __future__ import annotations

import dataclasses
from itertools import combinations

import sympy as sp

from tsallis.derivations import symbols as S
from tsallis.derivations.primitives import (
    PositivePart,
    expm1,
    exprel,
    log1p,
    log1prel,
    log1prel_slope,
)
from tsallis.derivations.result import Kernel, KernelSet

SOURCE = "derivations/discrete.py"

z = sp.Symbol("z", real=True)  # score, already shifted by the row maximum
tau = sp.Symbol("tau", real=True)  # threshold
first = sp.Symbol("first", real=True)  # sum of the k largest scores
second = sp.Symbol("second", nonnegative=True)  # sum of their squares
size = sp.Symbol("size", positive=True)  # support size k
eps = sp.Symbol("eps", positive=True)  # eq 10 floor
w_plus = sp.Symbol("w_plus", nonnegative=True)  # max(0, w_k)
w_minus = sp.Symbol("w_minus", nonnegative=True)  # max(0, -w_k)
others = sp.Symbol("others", nonnegative=True)  # prod_{l != k} (1 - exp(-w_l^-))
base = sp.Symbol("base", real=True)  # (alpha - 1)(z - tau), alpha-entmax's base


def _support_sum_equation(power: int) -> sp.Eq:
    """sum_{i in S} (z_i - tau)^power = 1 written with the support's power sums.

    Expanded in powers of z_i, the sum needs sum z_i^0 = size, sum z_i = first and
    sum z_i^2 = second: the cumulative sums of the sorted scores and of their squares
    give them for every prefix at once.
    """
    z_i = sp.Symbol("z_i", real=True)
    power_sums = {0: size, 1: first, 2: second}
    terms = sp.Poly((z_i - tau) ** power, z_i).terms()
    total = sp.Add(*(coeff * power_sums[n] for (n,), coeff in terms))
    return sp.Eq(sp.expand(total), 1)


def sparsemax_threshold() -> sp.Expr:
    """tau for alpha = 2 (p_i = [z_i - tau]_+) on a support of ``size`` entries:
    (first - 1) / size, two operations on the prefix sums."""
    (root,) = sp.solve(_support_sum_equation(1), tau)
    return sp.factor(root)


def entmax15_threshold() -> sp.Expr:
    """tau for alpha = 3/2 (p_i = [z_i - tau]_+^2 with z = v/2) on a support of ``size``.

    The quadratic has two roots; the one below the mean first / size is the threshold
    (the other would give the smaller support entries a negative base). Its radicand
    is size^2 (1 / size - var) for the support's variance var.
    """
    roots = sp.solve(_support_sum_equation(2), tau)
    mean = first / size
    below = [root for root in roots if sp.simplify(root - mean).could_extract_minus_sign()]
    (root,) = below
    radicand = sp.expand(sp.simplify((root - mean) ** 2) * size**2)
    var = second / size - mean**2
    assert sp.simplify(radicand - size**2 * (1 / size - var)) == 0, radicand
    # Outside a valid support the radicand may be negative: 0 there (the caller
    # rejects that size anyway). Clipped, not a guarded branch: the same values, and
    # two operations where the guarded branch printed seven (each a kernel launch on a
    # GPU). Gradients (torch_bridge.closed_forms is open to autograd) stay finite below
    # 0 (the clip's backward selects); at a radicand of exactly 0 the root's slope is
    # infinite, as sqrt's own is.
    return (first - sp.sqrt(PositivePart(radicand))) / size


def entmax_gppr_weight() -> sp.Expr:
    """s = dp/dz written in p: s = p^(2 - alpha) on the support, 0 off it.

    Derived by differentiating p = [(alpha - 1) z - tau]^(1/(alpha-1)) (Martins 2020 eq 7)
    inside the support and eliminating the base with base = p^(alpha - 1).
    """
    base = sp.Symbol("base", positive=True)
    alpha = sp.Symbol("alpha", positive=True)
    k = 1 / (alpha - 1)
    slope = sp.diff(((alpha - 1) * z - tau) ** k, z).subs((alpha - 1) * z - tau, base)
    p = sp.Symbol("p", positive=True)
    weight = sp.powsimp(sp.expand_power_base(slope.subs(base, p ** (alpha - 1)), force=True))
    weight = sp.simplify(sp.powsimp(weight, force=True))
    assert sp.simplify(weight - p ** (2 - alpha)) == 0, weight
    return sp.Piecewise((S.p ** (2 - S.alpha), S.p > 0), (0, True))


def entmax_from_base() -> sp.Expr:
    """p from its base b = (alpha - 1)(z - tau) (Martins 2020 eq 7): p = [b]_+^(1/(alpha-1)).

    The caller forms b as (alpha - 1)((z - tau_hi) - tau_lo), the threshold a
    double-double, so that b keeps its relative precision at the support edge (the
    form 1 + (alpha - 1) f rounds b to an absolute eps there, which dp/dz = p^(2-alpha)
    amplifies without bound for alpha > 2). For alpha > 1.
    """
    positive = sp.Symbol("b", positive=True)
    alpha = sp.Symbol("alpha", positive=True)
    p = ((alpha - 1) * z - tau) ** (1 / (alpha - 1))
    in_base = p.subs(tau, (alpha - 1) * z - positive)
    assert sp.simplify(in_base - positive ** (1 / (alpha - 1))) == 0, in_base
    return sp.Piecewise((base ** (1 / (S.alpha - 1)), base > 0), (0, True))


# the anchored finish above 2 (tsallis.core.discrete._anchored_above_two): the threshold
# written through q, the p of the support's smallest entry z_k, so that every base is
# formed from q and an entry's gap (alpha - 1)(z - z_k) with its relative precision
# (a double-double threshold resolves a base to about eps^2 |tau|; at alpha = 100 a q
# of 0.008 is a base of 1e-208)
edge = sp.Symbol("edge", nonnegative=True)  # q
gap = sp.Symbol("gap", nonnegative=True)  # (alpha - 1)(z - z_k)


def entmax_anchored_base() -> sp.Expr:
    """An entry's base (alpha - 1)(z - tau) from q and its gap: the edge entry's own base
    is q^(alpha - 1) (entmax_from_base solved for it), which fixes tau = (alpha - 1) z_k
    - q^(alpha - 1)."""
    q, alpha, zk = (
        sp.Symbol("q", positive=True),
        sp.Symbol("alpha", positive=True),
        sp.Symbol("z_k"),
    )
    (edge_base,) = sp.solve(sp.Eq(base ** (1 / (alpha - 1)), q), base)
    threshold = (alpha - 1) * zk - edge_base
    in_gap = sp.expand(((alpha - 1) * z - threshold).subs(z, zk + gap / (alpha - 1)))
    assert sp.simplify(in_gap - (gap + q ** (alpha - 1))) == 0, in_gap
    return gap + edge ** (S.alpha - 1)


def entmax_anchored_slope() -> sp.Expr:
    """dp/dq of an entry's p = (q^(alpha - 1) + gap)^(1/(alpha - 1)), written in q and p:
    (q / p)^(alpha - 2), at most 1 (p >= q); 0 off the support."""
    q, alpha = sp.Symbol("q", positive=True), sp.Symbol("alpha", positive=True)
    g, p = sp.Symbol("g", positive=True), sp.Symbol("p", positive=True)
    slope = sp.diff((q ** (alpha - 1) + g) ** (1 / (alpha - 1)), q)
    written = slope.subs(g, p ** (alpha - 1) - q ** (alpha - 1))
    written = sp.powsimp(sp.powdenest(written, force=True), force=True)
    assert sp.simplify(sp.expand_power_base(written / (q / p) ** (alpha - 2), force=True)) == 1
    return sp.Piecewise(((edge / S.p) ** (S.alpha - 2), S.p > 0), (0, True))


def _alpha_partial_in_f() -> tuple[sp.Expr, sp.Symbol]:
    """(dp/dalpha at a fixed shift, written in f = z - c; f): p = exp_{2-alpha}(f), i.e.
    log p = f log1prel((alpha - 1) f), differentiated in alpha, checked to be p f^2
    log1prel'((alpha - 1) f)."""
    f = sp.Symbol("f", real=True)
    log_p = f * log1prel((S.alpha - 1) * f)
    partial = sp.diff(sp.exp(log_p), S.alpha)
    expected = sp.exp(log_p) * f**2 * log1prel_slope((S.alpha - 1) * f)
    assert sp.simplify(partial - expected) == 0, partial
    return partial, f


def entmax_alpha_partial() -> sp.Expr:
    """dp/dalpha at a fixed threshold, written in p: the alpha-gradient's building block.

    With the threshold as a shift c, p = exp_{2-alpha}(f), f = z - c, i.e.
    log p = f log1prel((alpha - 1) f). Differentiating in alpha gives
    p f^2 log1prel'((alpha - 1) f); f is then eliminated with f = log_{2-alpha}(p)
    = log(p) exprel((alpha - 1) log p) and (alpha - 1) f = expm1((alpha - 1) log p)
    (below (alpha - 1) log p = -1 with the base instead: _alpha_partial_in_p).
    Smooth through alpha = 1 (where it is -p log(p)^2 / 2); 0 off the support.
    The total derivative adds -s_i sum_j(partial_j) / sum_j s_j (the threshold moves),
    done by the caller.
    """
    return sp.Piecewise((_alpha_partial_in_p(*_alpha_partial_in_f(), shift=0), S.p > 0), (0, True))


def _alpha_partial_in_p(partial: sp.Expr, f: sp.Symbol, shift: int) -> sp.Expr:
    """dp/dalpha at a fixed threshold in p, plus ``shift`` s / (alpha - 1)^2 (0 or 1),
    two forms by t = (alpha - 1) log p (= log of the base p^(alpha - 1)).

    t >= -1: the series-safe form (log1prel' of expm1(t), exprel(t): smooth through alpha
    = 1). t < -1: there expm1(t) rounds to -1 once the base is below eps (alpha = 10, p =
    0.01: t = -41) and log1prel' of -1 is inf - inf (NaN alpha-gradients on 2% of N(0,
    1) rows of 6 at alpha = 10); written with the base instead, f = (p^(alpha - 1) - 1) /
    (alpha - 1) turns the partial into (p (1 - t) - s) / (alpha - 1)^2, s = p^(2 -
    alpha) = p / base (no cancellation below t = -1: s > e p). Each checked against the
    derivative in f to 25 digits at a point of its side."""
    alpha, q = S.alpha, sp.Symbol("q", positive=True)
    log_q = sp.log(q)
    t = (alpha - 1) * log_q
    f_of_p = log_q * exprel(t)
    series = q * f_of_p**2 * log1prel_slope(expm1(t))
    with_base = (q * (1 - t) - q ** (2 - alpha)) / (alpha - 1) ** 2
    extra = shift * q ** (2 - alpha) / (alpha - 1) ** 2
    for form, point in (
        (series, {q: sp.Rational(3, 7), alpha: sp.Rational(13, 10)}),
        (with_base, {q: sp.Rational(1, 1000), alpha: sp.Integer(5)}),
        (with_base, {q: sp.Rational(2, 5), alpha: sp.Rational(27, 10)}),
    ):
        direct = partial.subs(f, (q ** (alpha - 1) - 1) / (alpha - 1)).subs(point)
        values = [sp.N(v.rewrite(sp.log).rewrite(sp.exp), 30) for v in (direct, form.subs(point))]
        assert abs(values[0] - values[1]) < 1e-25 * max(1, abs(values[0])), values
    if shift:  # above 2, where s may overflow: the base form's -s and the shift cancel
        with_base = sp.simplify(with_base + extra)
        assert sp.simplify(with_base - q * (1 - t) / (alpha - 1) ** 2) == 0, with_base
    else:
        with_base = with_base + extra
    return sp.Piecewise(
        (with_base.subs(q, S.p), (alpha - 1) * sp.log(S.p) < -1),
        ((series + extra).subs(q, S.p), True),
    )


def entmax_alpha_partial_above_two() -> sp.Expr:
    """entmax_alpha_partial plus s / (alpha - 1)^2, s = p^(2 - alpha), for alpha > 2.

    The alpha-gradient <g, a> - <g, s> sum(a) / sum(s) is the same for a plus any
    per-row multiple of s (the threshold's move removes it). Above 2, s overflows where p
    is small (p = 5e-4 at alpha = 100: s = 1e320), and the partial's -s / (alpha - 1)^2
    with it (then inf - inf in the gradient); shifted, that term is gone: p (1 - t) /
    (alpha - 1)^2 below t = -1, bounded. 0 off the support."""
    return sp.Piecewise((_alpha_partial_in_p(*_alpha_partial_in_f(), shift=1), S.p > 0), (0, True))


def ev_softmax_offsupport_shift() -> sp.Expr:
    """Eq 10 in log form: log p_i = v_i + log(1{i in S} + eps) - log Z.

    By translation invariance the support's log(1 + eps) can be removed, so an
    entry off the support is shifted by log(eps) - log(1 + eps) (-> -oo as
    eps -> 0, which is eq 7).
    """
    inside = sp.log(1 + eps)
    outside = sp.log(0 + eps)
    shift = sp.expand_log(outside - inside, force=True)
    return shift.replace(lambda e: e == sp.log(1 + eps), lambda e: log1p(eps))


def evidential_mass() -> sp.Expr:
    """Eq 6: m_k = exp(-w_k^-) (exp(w_k^+) - 1 + prod_{l != k}(1 - exp(-w_l^-))).

    exp(w^+) - 1 is kept as expm1 so a small positive weight keeps its digits.
    """
    definition = sp.exp(-w_minus) * (sp.exp(w_plus) - 1 + others)
    stable = sp.exp(-w_minus) * (expm1(w_plus) + others)
    assert sp.simplify(stable.rewrite(sp.exp) - definition) == 0
    return stable


# --- symbolic checks (Chen 2021 eqs 9, 12, Lemma 3.2; Martins 2020 Prop 3 -> eq 14) ---


def _scores(count: int) -> list[sp.Symbol]:
    return list(sp.symbols(f"v1:{count + 1}", real=True))


def support_patterns(count: int) -> list[tuple[int, ...]]:
    """Supports {k: v_k >= mean(v)} of open regions: every nonempty proper subset.

    (The full set is the support only on the constant rows, a null set.)
    """
    return [s for size_ in range(1, count) for s in combinations(range(count), size_)]


def _restricted_softmax(v: list[sp.Symbol], support: tuple[int, ...]) -> sp.Matrix:
    total = sum(sp.exp(v[j]) for j in support)
    return sp.Matrix([sp.exp(v[i]) / total if i in support else 0 for i in range(len(v))])


def check_ev_softmax_jacobian(count: int) -> int:
    """Eq 9 on every support pattern: J = Diag(p) - p p^T. Returns patterns checked.

    Inside an open region the indicator 1{v_k >= mean} is constant, so the
    Jacobian is that of the softmax restricted to the support.
    """
    v = _scores(count)
    for support in support_patterns(count):
        p = _restricted_softmax(v, support)
        jacobian = p.jacobian(v)
        expected = sp.diag(*p) - p * p.T
        if not (jacobian - expected).applyfunc(sp.simplify).is_zero_matrix:
            raise AssertionError(f"eq 9 fails on support {support}")
    return len(support_patterns(count))


def check_nll_gradient_limit(count: int) -> int:
    """Eq 12: lim_{eps -> 0} grad log ev_softmax_train,eps(v)_i = delta_i - ev_softmax(v).

    Checked for every target i, inside and outside the support, on every
    support pattern. Returns the number of (pattern, target) pairs.
    """
    v = _scores(count)
    checked = 0
    for support in support_patterns(count):
        floor = [(1 if j in support else 0) + eps for j in range(count)]
        total = sum(floor[j] * sp.exp(v[j]) for j in range(count))
        p = _restricted_softmax(v, support)
        for i in range(count):
            log_p = sp.log(floor[i]) + v[i] - sp.log(total)
            for k in range(count):
                limit = sp.limit(sp.diff(log_p, v[k]), eps, 0)
                expected = (1 if i == k else 0) - p[k]
                if sp.simplify(limit - expected) != 0:
                    raise AssertionError(f"eq 12 fails: support {support}, i={i}, k={k}")
            checked += 1
    return checked


def check_lemma_3_2(count: int, features: int) -> None:
    """Lemma 3.2: with v = beta^T [1; phi], v_k - mean(v) equals w_k of eq 4."""
    beta = sp.Matrix(features + 1, count, lambda j, k: sp.Symbol(f"b{j}_{k}", real=True))
    phi = [sp.Integer(1), *sp.symbols(f"phi1:{features + 1}", real=True)]
    v = [sum(phi[j] * beta[j, k] for j in range(features + 1)) for k in range(count)]
    v_bar = sum(v) / count
    for k in range(count):
        w_k = beta[0, k] - sum(beta[0, :]) / count
        w_k += sum(phi[j] * (beta[j, k] - sum(beta[j, :]) / count) for j in range(1, features + 1))
        if sp.expand(v[k] - v_bar - w_k) != 0:
            raise AssertionError(f"Lemma 3.2 fails at k={k}")


def beta_covariance(p: sp.Matrix, escort_power: sp.Expr, support: tuple[int, ...]) -> sp.Matrix:
    """Eq 17 on a finite domain with phi(k) = psi(k) = e_k and counting measure.

    cov = ||p||_b^b (E_esc[e e^T] - E_esc[e] E_esc[e]^T), the escort p^b / sum p^b
    living on the support (0^0 counts as 0 off it).
    """
    count = p.shape[0]
    powered = [p[i] ** escort_power if i in support else 0 for i in range(count)]
    atoms = sp.symbols(f"_pow0:{count}", positive=True)  # keep p^b atomic in the algebra
    stand_in = sp.Matrix([atoms[i] if i in support else 0 for i in range(count)])
    norm = sum(stand_in)
    escort = stand_in / norm
    cov = (norm * (sp.diag(*escort) - escort * escort.T)).applyfunc(sp.cancel)
    return cov.subs({atoms[i]: powered[i] for i in support})


def check_finite_prop3(count: int) -> int:
    """Martins 2020: Prop 3 on a finite domain reduces to eq 14, and is the true Jacobian.

    - alpha = 1: cov_{p,1} = Diag(p) - p p^T = Jacobian of softmax.
    - alpha = 2: cov_{p,0} = Diag(s) - s s^T / 1^T s = Jacobian of sparsemax
      on each support pattern.
    - any alpha: cov_{p,2-alpha} = Jacobian of alpha-entmax by implicit
      differentiation of sum_S [(alpha-1) v_i - tau]^(1/(alpha-1)) = 1 (gppr form).

    Returns the number of support patterns checked per alpha case.
    """
    v = _scores(count)
    full = tuple(range(count))
    softmax = _restricted_softmax(v, full)
    cov1 = beta_covariance(softmax, 1, full)
    if not (softmax.jacobian(v) - cov1).applyfunc(sp.simplify).is_zero_matrix:
        raise AssertionError("alpha = 1: Jacobian != cov_{p,1}")
    if not (cov1 - (sp.diag(*softmax) - softmax * softmax.T)).applyfunc(sp.simplify).is_zero_matrix:
        raise AssertionError("alpha = 1: cov_{p,1} != eq 14")

    patterns = [s for size_ in range(1, count + 1) for s in combinations(full, size_)]
    for support in patterns:
        threshold = (sum(v[i] for i in support) - 1) / len(support)
        sparse = sp.Matrix([v[i] - threshold if i in support else 0 for i in range(count)])
        indicator = sp.Matrix([1 if i in support else 0 for i in range(count)])
        eq14 = sp.diag(*indicator) - indicator * indicator.T / len(support)
        cov0 = beta_covariance(sparse, 0, support)
        if not (sparse.jacobian(v) - eq14).applyfunc(sp.simplify).is_zero_matrix:
            raise AssertionError(f"alpha = 2: Jacobian != eq 14 on {support}")
        if not (cov0 - eq14).applyfunc(sp.simplify).is_zero_matrix:
            raise AssertionError(f"alpha = 2: cov_{{p,0}} != eq 14 on {support}")

    # alpha-entmax: p_i = h(u_i) with u_i = (alpha - 1) v_i - tau(v) and h(u) = u^k.
    # Implicit differentiation of sum_S h(u_i) = 1 with h kept abstract gives J
    # rationally in h'(u_i); the single scalar fact (alpha - 1) h'(u) = h(u)^(2-alpha)
    # is checked separately (entmax_gppr_weight), so J = cov_{p,2-alpha} follows.
    alpha = sp.Symbol("alpha", positive=True)
    t = sp.Symbol("t", real=True)
    h = sp.Function("h")
    slopes = sp.symbols(f"hp1:{count + 1}", positive=True)
    powered = sp.symbols(f"q1:{count + 1}", positive=True)  # p_i^(2-alpha)
    for support in patterns:
        bases = [(alpha - 1) * v[i] - t for i in range(count)]
        constraint = sum(h(bases[i]) for i in support) - 1
        dtau = [-sp.diff(constraint, v[j]) / sp.diff(constraint, t) for j in range(count)]
        jac = sp.Matrix(
            [
                [
                    sp.diff(h(bases[i]), v[j]) + sp.diff(h(bases[i]), t) * dtau[j]
                    if i in support
                    else 0
                    for j in range(count)
                ]
                for i in range(count)
            ]
        )
        derivative = {sp.diff(h(bases[i]), v[i]) / (alpha - 1): slopes[i] for i in range(count)}
        jac = jac.subs(derivative)
        slope_form = sp.Matrix(
            [(alpha - 1) * slopes[i] if i in support else 0 for i in range(count)]
        )
        gppr = sp.diag(*slope_form) - slope_form * slope_form.T / sum(slope_form)
        if not (jac - gppr).applyfunc(sp.simplify).is_zero_matrix:
            raise AssertionError(f"alpha-entmax: Jacobian != gppr form on {support}")
        p = sp.Matrix([sp.Symbol(f"P{i}", positive=True) for i in range(count)])
        cov = beta_covariance(p, 2 - alpha, support).subs(
            {p[i] ** (2 - alpha): powered[i] for i in range(count)}
        )
        weights = sp.Matrix([powered[i] if i in support else 0 for i in range(count)])
        expected = sp.diag(*weights) - weights * weights.T / sum(weights)
        if not (cov - expected).applyfunc(sp.simplify).is_zero_matrix:
            raise AssertionError(f"cov_{{p,2-alpha}} != gppr form on {support}")
    return len(patterns)


def run_symbolic_checks() -> dict[str, int]:
    """All of Chen 2021's identities and the finite Prop 3, for K = 3 and 4."""
    counts: dict[str, int] = {}
    for count in (3, 4):
        counts[f"eq9_K{count}"] = check_ev_softmax_jacobian(count)
        counts[f"eq12_K{count}"] = check_nll_gradient_limit(count)
        check_lemma_3_2(count, features=count - 1)
        counts[f"prop3_K{count}"] = check_finite_prop3(count)
    return counts


# the row sums of a Newton step on the threshold shift c: P = sum p, S = sum p^(2 - alpha),
# T = sum p^(3 - 2 alpha), U = sum p^(4 - 3 alpha) (the GPU loop's stacked powers)
total = sp.Symbol("total", positive=True)
slope = sp.Symbol("slope", positive=True)
bent = sp.Symbol("bent", nonnegative=True)
fourth = sp.Symbol("fourth", nonnegative=True)


def _shift_derivatives(order: int) -> list[sp.Expr]:
    """d^n h / dc^n, n = 1..order, for h(c) = log_{2-alpha}(P(c)) in the row sums.

    p_i = exp_{2-alpha}(z_i - c) gives dp_i/dc = -p_i^(2 - alpha), so dP/dc = -S, dS/dc =
    -(2 - alpha) T, dT/dc = -(3 - 2 alpha) U: the chain rule through these.
    """
    c = sp.Symbol("c", real=True)
    sums = [sp.Function(name)(c) for name in ("P", "S", "T", "U")]
    rates = [-sums[1], -(2 - S.alpha) * sums[2], -(3 - 2 * S.alpha) * sums[3]]
    h = (sums[0] ** (S.alpha - 1) - 1) / (S.alpha - 1)
    out, current = [], h
    for _ in range(order):
        current = sp.diff(current, c)
        current = current.subs(
            {sp.Derivative(f, c): r for f, r in zip(sums[:3], rates, strict=True)}
        )
        out.append(current)
    plain = dict(zip(sums, (total, slope, bent, fourth), strict=True))
    return [sp.simplify(d.subs(plain)) for d in out]


def halley_bend() -> sp.Expr:
    """-h''/(2h') per row: Halley's step is N / (1 - N bend) for Newton's N = -h/h'."""
    first_, second_ = _shift_derivatives(2)
    return sp.factor(sp.simplify(-second_ / (2 * first_)))  # (T P - S^2): one difference


def halley_error() -> sp.Expr:
    """h'''/(6h') - (h''/(2h'))^2: a Halley step of length d leaves about its magnitude
    times d^3 (the leading term of the error)."""
    first_, second_, third_ = _shift_derivatives(3)
    error = sp.expand(third_ / (6 * first_) - (second_ / (2 * first_)) ** 2)
    # three terms (the cross terms in S T cancel), each a scalar in alpha times a ratio
    return sp.collect(error, [fourth, bent], sp.factor)


# the finish of the eager loop (tsallis.core.discrete._Buffers.finished): from the state
# y = 1 + (alpha - 1) f at a shift c, with t = p^(3 - 2 alpha) = s / y, p and s moved to
# c + d to first order as s' = t (y - r d) and p' = (y - (alpha - 1) d) s'
state = sp.Symbol("state", positive=True)
step = sp.Symbol("step", real=True)


def _state_powers(shift: sp.Expr) -> tuple[sp.Expr, sp.Expr, sp.Expr]:
    """(p, s, t) = y^(k - (k - 1) alpha) / (alpha - 1), k = 1, 2, 3, at the state y moved
    by ``shift`` (y - (alpha - 1) shift)."""
    moved = state - (S.alpha - 1) * shift
    return tuple(moved ** ((k - (k - 1) * S.alpha) / (S.alpha - 1)) for k in (1, 2, 3))


def finish_rate() -> sp.Expr:
    """r = -(ds/dc) / t: the rate of s per unit shift, relative to t (s' = t (y - r d))."""
    _, s_, t_ = _state_powers(step)
    return sp.simplify(-sp.diff(s_, step).subs(step, 0) / t_.subs(step, 0))


def finish_error() -> sp.Expr:
    """The d^2 coefficient of the finish's error, the same for p and s: p(c + d) - p' is
    it times t d^2 and s(c + d) - s' it times y^((4 - 3 alpha)/(alpha - 1)) d^2 (both
    checked here: p' and s' agree with p and s to first order, and their errors share
    the coefficient)."""
    p_, s_, t_ = _state_powers(step)
    rate = finish_rate()
    t0, y = t_.subs(step, 0), state
    s_finish = t0 * (y - rate * step)
    p_finish = (y - (S.alpha - 1) * step) * s_finish
    log_state = sp.Symbol("log_state", real=True)

    def plain(expr: sp.Expr) -> sp.Expr:  # (y = e^L: the powers of y combine)
        return sp.factor(sp.simplify(sp.powsimp(expr.subs(y, sp.exp(log_state)), force=True)))

    errors = []
    for exact, finish, unit in ((p_, p_finish, t0), (s_, s_finish, t0 / y)):
        series = sp.series(exact - finish, step, 0, 3).removeO()
        assert plain(series.coeff(step, 0)) == 0
        assert plain(series.coeff(step, 1)) == 0
        errors.append(plain(series.coeff(step, 2) / unit))
    assert sp.simplify(errors[0] - errors[1]) == 0
    return errors[0]


def finish_edge_factors() -> tuple[sp.Expr, sp.Expr]:
    """(B_in, B_out): s's finish error over h^a at the support edge, in v = y / h, where
    h = (alpha - 1)|d| and a = (2 - alpha) / (alpha - 1) is s's power of the state.

    Above 4/3 (1 < a < 2) the factor y^((4 - 3 alpha)/(alpha - 1)) of finish_error is
    unbounded at the edge, and tsallis.core.discrete._finish_bound bounds s's error by
    h^a instead: with the state rising (d < 0, entries come in) it is h^a B_in(v), B_in
    = (v + 1)^a - v^a - a v^(a - 1); falling (d > 0), h^a B_out(v), B_out = (v - 1)_+^a -
    v^(a - 1) (v - a)_+. Checked here: both against the finish's s' = t [y - r d]_+ (r =
    finish_rate) at y = v h, and B_in(0) = 1. That 1 bounds both (check_finish_edge_bound
    at 40 digits): B_in' = a (g(v + 1) - g(v) - g'(v)) with g = x^(a - 1) concave, so
    B_in falls from 1; B_out is 0 up to v = 1, (v - 1)^a <= (a - 1)^a < 1 up to v = a,
    and beyond, the Taylor remainder of x^a over a unit step, a (a - 1) xi^(a - 2) / 2 <=
    a (a - 1)^(a - 1) / 2 < 1 (xi >= a - 1)."""
    v, h = sp.symbols("v h", positive=True)
    power = (2 - S.alpha) / (S.alpha - 1)
    rate = finish_rate()
    y = v * h
    t0 = y ** (power - 1)
    b_in = (v + 1) ** power - v**power - power * v ** (power - 1)
    b_out = sp.Max(v - 1, 0) ** power - v ** (power - 1) * sp.Max(v - power, 0)
    # the state moves by (alpha - 1) d = -h (rising) or +h (falling): d = -+h / (alpha - 1)
    for sign, factor in ((-1, b_in), (1, b_out)):
        d = sign * h / (S.alpha - 1)
        exact = sp.Max(y - (S.alpha - 1) * d, 0) ** power
        finish = t0 * sp.Max(y - rate * d, 0)
        for at in (sp.Rational(1, 3), sp.Rational(3, 2), 5):  # each branch of the clamps
            for alpha in (sp.Rational(7, 5), sp.Rational(29, 20)):
                values = {v: at, S.alpha: alpha}
                got = sp.nsimplify(sp.simplify(((exact - finish) / h**power).subs(values)))
                assert sp.simplify(got - factor.subs(values)) == 0, (sign, at, alpha)
    for alpha in (sp.Rational(4, 3) + sp.Rational(1, 100), sp.Rational(3, 2) - sp.Rational(1, 100)):
        assert b_in.subs({S.alpha: alpha, v: 0}) == 1, alpha  # (0^(a - 1) = 0: a > 1)
    return b_in, b_out


def check_finish_edge_bound(alphas: tuple[float, ...] = (1.34, 1.4, 1.45, 1.49)) -> float:
    """The largest of |B_in| and |B_out| (finish_edge_factors) at 40 digits over v from 0
    to 1e6 (a geometric grid, the clamps' kinks included): at most 1, attained at v = 0."""
    import mpmath as mp

    b_in, b_out = finish_edge_factors()
    v = sp.Symbol("v", positive=True)
    largest = 0.0
    with mp.workdps(40):
        grid = [mp.mpf(0)] + [mp.mpf(10) ** (k / 8) for k in range(-64, 49)]
        for alpha in alphas:
            a = (2 - mp.mpf(alpha)) / (mp.mpf(alpha) - 1)
            points = [*grid, mp.mpf(1), a, a + mp.mpf(10) ** -30]
            for factor in (b_in, b_out):
                f = sp.lambdify((v, S.alpha), factor, "mpmath")
                worst = max(abs(f(x, mp.mpf(alpha))) for x in points)
                if worst > 1 + mp.mpf(10) ** -35:
                    raise AssertionError(f"finish edge factor {worst} > 1 at alpha = {alpha}")
                largest = max(largest, float(worst))
    return largest


def derive_discrete() -> KernelSet:
    """Elementwise closed forms of the finite maps.

    The symbolic identities (``run_symbolic_checks``, about 12 s) are run by the
    test suite, not on every ``tsallis derive``.
    """
    kernels = (
        Kernel(
            "sparsemax_threshold",
            (first, size),
            sparsemax_threshold(),
            "tau solving sum_S (z_i - tau) = 1 for a support of `size` entries summing to `first`.",
        ),
        Kernel(
            "entmax15_threshold",
            (first, second, size),
            entmax15_threshold(),
            "tau solving sum_S (z_i - tau)^2 = 1 (alpha = 3/2, z = v/2); S's sums of z, z^2.",
        ),
        Kernel(
            "entmax_gppr_weight",
            (S.p, S.alpha),
            entmax_gppr_weight(),
            "dp/dz = p^(2 - alpha) on the support, 0 off it (J = Diag(s) - s s^T / sum s).",
        ),
        Kernel(
            "entmax_from_base",
            (base, S.alpha),
            entmax_from_base(),
            "p = base^(1/(alpha - 1)) for base = (alpha - 1)(z - tau) > 0, 0 off the support.",
        ),
        Kernel(
            "entmax_anchored_base",
            (edge, gap, S.alpha),
            entmax_anchored_base(),
            "An entry's base (alpha - 1)(z - tau) from the edge entry's p (edge) and its gap.",
        ),
        Kernel(
            "entmax_anchored_slope",
            (edge, S.p, S.alpha),
            entmax_anchored_slope(),
            "dp/dq = (q / p)^(alpha - 2) of an entry's p in the edge entry's p q; 0 off it.",
        ),
        Kernel(
            "entmax_alpha_partial",
            (S.p, S.alpha),
            entmax_alpha_partial(),
            "dp/dalpha at a fixed threshold: p f^2 log1prel'((alpha-1) f), f = log_{2-alpha} p.",
        ),
        Kernel(
            "entmax_alpha_partial_above_two",
            (S.p, S.alpha),
            entmax_alpha_partial_above_two(),
            "entmax_alpha_partial + p^(2 - alpha) / (alpha - 1)^2 (alpha > 2: no overflow).",
        ),
        Kernel(
            "halley_bend",
            (total, slope, bent, S.alpha),
            halley_bend(),
            "-h''/(2h') for h = log_{2-alpha}(sum p) in c: Halley's step is N / (1 - N bend).",
        ),
        Kernel(
            "halley_error",
            (total, slope, bent, fourth, S.alpha),
            halley_error(),
            "h'''/(6h') - (h''/(2h'))^2: a Halley step d leaves about |this| d^3.",
        ),
        Kernel(
            "finish_rate",
            (S.alpha,),
            finish_rate(),
            "-(ds/dc) / t: the eager loop's first-order finish moves s to t (y - this d).",
        ),
        Kernel(
            "finish_error",
            (S.alpha,),
            finish_error(),
            "The finish's d^2 error coefficient: of t in p's, of y^((4-3 alpha)/(alpha-1)) in s's.",
        ),
        Kernel(
            "ev_softmax_offsupport_shift",
            (eps,),
            ev_softmax_offsupport_shift(),
            "log(eps) - log(1 + eps): eq 10 as a shift of the logits off the support.",
        ),
        Kernel(
            "evidential_mass",
            (w_plus, w_minus, others),
            evidential_mass(),
            "Eq 6: exp(-w^-) (exp(w^+) - 1 + prod_{l != k} (1 - exp(-w_l^-))).",
        ),
    )
    # One module for NumPy and Torch (the array-namespace printer): tsallis.core.discrete.
    kernels = tuple(dataclasses.replace(kernel, backends=("xp",)) for kernel in kernels)
    return KernelSet(
        name="discrete",
        title="Finite sparse maps: sparsemax, entmax, ev-softmax",
        source="Martins 2020 eqs 3, 14, 17-18; Chen 2021 eqs 4-12",
        kernels=kernels,
    )
