"""Independent mpmath oracles for the finite maps, typed from the papers' definitions.

Used by the discrete tests only; nothing here is imported by the package.
"""

from __future__ import annotations

import mpmath as mp

DIGITS = 40


def _row(v: object) -> list[mp.mpf]:
    """Floats (any dtype) exactly as mp numbers; mp numbers kept as they are."""
    return [x if isinstance(x, mp.mpf) else mp.mpf(float(x)) for x in v]


def softmax(v: object) -> list[mp.mpf]:
    """Martins 2020 eq 3."""
    with mp.workdps(DIGITS):
        e = [mp.exp(x) for x in _row(v)]
        return [x / mp.fsum(e) for x in e]


def entmax(v: object, alpha: float) -> list[mp.mpf]:
    """argmax_p p.v + H_alpha(p): p_i = [(alpha-1) v_i - tau]_+^(1/(alpha-1)), sum p = 1.

    tau by bisection on [max - 1, max] at 40 digits (above alpha = 2 more, as its
    smallest p needs: _entmax_bisected); alpha = 1 is softmax.
    Below 1, p_i = (1 + (1 - alpha)(c - v_i))^(-1/(1 - alpha)) (dense), with the
    shift c >= max v by bisection on a bracket doubled until its mass is below 1.
    """
    if alpha == 1:
        return softmax(v)
    if alpha < 1:
        return _entmax_below_one(v, alpha)
    digits = DIGITS
    while True:
        p, needed = _entmax_bisected(v, alpha, digits)
        if needed <= digits:
            return p
        digits = needed + 10


def _entmax_bisected(v: object, alpha: float, digits: int) -> tuple[list[mp.mpf], int]:
    """(p by bisection on tau at ``digits``, the digits its smallest positive p needs).

    Above alpha = 2 an entry's p = base^(1/(alpha - 1)) holds its digits only where tau
    does to (alpha - 1) log10(1/p) more: at alpha = 100 a p of 0.008 sits on a base of
    1e-208, so the caller raises the digits until they cover that (the bisection takes
    enough steps to resolve them)."""
    with mp.workdps(digits):
        a = mp.mpf(alpha)
        z = [(a - 1) * x for x in _row(v)]
        power = 1 / (a - 1)

        def mass(t: mp.mpf) -> mp.mpf:
            return mp.fsum(max(x - t, 0) ** power for x in z)

        lo, hi = max(z) - 1, max(z)
        for _ in range(max(300, int(3.4 * digits) + 20)):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if mass(mid) >= 1 else (lo, mid)
        p = [max(x - lo, 0) ** power for x in z]
        p = [x / mp.fsum(p) for x in p]
        smallest = min(x for x in p if x > 0)
        spread = max(abs(x) for x in z) + 1
        lost = (a - 1) * mp.log10(1 / smallest) + mp.log10(spread) if alpha > 2 else 0
        return p, DIGITS + int(mp.ceil(lost))


def _entmax_below_one(v: object, alpha: float) -> list[mp.mpf]:
    with mp.workdps(DIGITS):
        a = mp.mpf(alpha)
        z = _row(v)

        def masses(c: mp.mpf) -> list[mp.mpf]:
            return [(1 + (1 - a) * (c - x)) ** (-1 / (1 - a)) for x in z]

        lo = hi = max(z)  # the top entry alone has mass 1 at c = max
        while mp.fsum(masses(hi)) >= 1:
            hi = lo + 2 * (hi - lo) + 1
        for _ in range(300):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if mp.fsum(masses(mid)) >= 1 else (lo, mid)
        p = masses(lo)
        return [x / mp.fsum(p) for x in p]


def ev_softmax(v: object, eps: float = 0.0, valid: object = None) -> list[mp.mpf]:
    """Chen 2021 eq 7 / eq 10 over the valid entries (the rest get 0)."""
    with mp.workdps(DIGITS):
        row = _row(v)
        keep = [True] * len(row) if valid is None else [bool(b) for b in valid]
        values = [x for x, k in zip(row, keep, strict=True) if k]
        if not values:
            return [mp.mpf(0)] * len(row)
        mean = mp.fsum(values) / len(values)
        e = mp.mpf(eps)
        w = [
            ((1 if x >= mean else 0) + e) * mp.exp(x) if k else 0
            for x, k in zip(row, keep, strict=True)
        ]
        return [x / mp.fsum(w) for x in w]


def evidential(phi: object, beta: object) -> tuple[list[mp.mpf], list[mp.mpf], list[mp.mpf]]:
    """Chen 2021 eqs 4-6 literally: weights w, masses m and p proportional to 1{m != 0} e^w."""
    with mp.workdps(DIGITS):
        rows = [[mp.mpf(float(b)) for b in row] for row in beta]
        features = [mp.mpf(1), *_row(phi)]
        count = len(rows[0])
        centred = [[b - mp.fsum(row) / count for b in row] for row in rows]
        w = [
            mp.fsum(f * row[k] for f, row in zip(features, centred, strict=True))
            for k in range(count)
        ]
        plus = [max(x, 0) for x in w]
        minus = [max(-x, 0) for x in w]
        masses = []
        for k in range(count):
            others = mp.mpf(1)
            for j in range(count):
                if j != k:
                    others *= 1 - mp.exp(-minus[j])
            masses.append(mp.exp(-minus[k]) * (mp.exp(plus[k]) - 1 + others))
        weights = [mp.exp(x) if m != 0 else 0 for x, m in zip(w, masses, strict=True)]
        return w, masses, [x / mp.fsum(weights) for x in weights]
