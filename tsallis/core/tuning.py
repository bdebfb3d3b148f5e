"""One table of the regime thresholds that both backends share.

Every constant here was chosen by measurement; the comment next to it says
what was measured. The 1D window moments and 2D radial moments
(tsallis.core.window) read all of theirs from here; so do the kernel-family panels
(tsallis.core.kernel); the discrete maps still keep their own.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "CLOSED_FORM_K",
    "CLOSED_MAX_OUT",
    "CLOSED_MAX_R",
    "FLOAT32",
    "FLOAT32_ANCHOR_OUT",
    "FLOAT32_CLOSED_MAX_R",
    "FLOAT32_EDGE_FLUSH",
    "FLOAT32_WIDTH_RATIO",
    "FLOAT64",
    "SMOOTH_EXPONENT",
    "STIRLING_MIN",
    "Accuracy",
    "closed_k",
]

# An integrand that vanishes like |t - e|^k at an end e of its interval, with
# k >= SMOOTH_EXPONENT, is integrated by plain Gauss-Legendre: that end costs the
# n-point rule O(n^(-2k-2)), far below rounding. Below it the rule carries the
# power (Gauss-Jacobi). Above it Gauss-Jacobi is also unusable: scipy's weights
# for (1 -+ x)^k overflow for k above about 1000, i.e. alpha - 1 below 1e-3.
SMOOTH_EXPONENT = 32.0

# log Gamma(x + h) - log Gamma(x) by Stirling's series (tsallis.core.special) from
# x >= STIRLING_MIN: eight terms leave < 2e-18 there; below it, log-gamma values.
STIRLING_MIN = 10.0

# alpha with a generated 1D closed form for the attention window moments,
# keyed to k = 1/(alpha - 1).
CLOSED_FORM_K = {2.0: 1, 1.5: 2, 4 / 3: 3, 1.25: 4}


def closed_k(alpha: float) -> int | None:
    """k = 1/(alpha - 1) for the alpha values with a generated 1D closed form, else None."""
    for value, k in CLOSED_FORM_K.items():
        if abs(alpha - value) < 1e-12:
            return k
    return None


# float32 window moments straight from the closed form, for RBFs at most this
# wide (r = RBF width / support half-width): measured within 7e-7 of the float64
# moments, relative to the row's largest (centres up to 3 half-widths outside,
# 2000 rows of 64 random widths in [1e-4, r]): k = 1 6.6e-7 at r <= 2, k = 2
# 4.7e-7 at 0.5, k = 3 3.5e-7 and k = 4 3.8e-7 at 0.2 (k = 4 at 0.5: 8.7e-6).
FLOAT32_CLOSED_MAX_R = {1: 2.0, 2: 0.5, 3: 0.2, 4: 0.2}
# ... and only when every row has an RBF centre at most this many RBF widths outside
# the support (negative: at least that many inside), so that the row's largest moment
# is one the closed form gets to float32 precision (a row whose RBFs all sit near or
# past its edges takes float64). Near and past the edge the closed form cancels: rows
# whose RBFs all lay 1.8-1.9 widths outside were 1.1e-5 (alpha = 3/2, 16 RBFs) and
# 8.2e-5 (5/4, one RBF) off, row-relative, with the earlier bound of 2 widths outside.
# Measured with the nearest centre d widths from the edge and the others up to 3 widths
# beyond it (256 rows, r from 0.01 to the bounds above, alpha = 2, 3/2, 4/3, 5/4), the
# worst row-relative rho: d = 1 outside 1e-6 to 8e-4, on the edge 3e-7 to 3e-6, half a
# width inside up to 2e-5 (5/4, r = 0.1), one width inside and deeper at most 9e-7 (r
# <= 0.95; a wider RBF cannot lie a width inside); 1200 random calls (1 to 8 RBFs,
# centres within 3 half-widths, r from 0.003), of which 593 pass at -1: at most 5.4e-7
# (the worst call that passed at 2: 2.5e-6; at 0: 1.0e-6).
FLOAT32_ANCHOR_OUT = -1.0
# Compiled, the float32 closed form flushes an edge density exp(-z^2/2) below
# exp(-FLOAT32_EDGE_FLUSH) (z > 11.3 RBF widths) to 0 (tsallis.core.arrays.edge_exp):
# products of such values with r^k reach float32's subnormal range, where this CPU's
# arithmetic takes microcode assists (configuration A: 444 -> 192 us for the forward
# kernel on one thread). An RBF that far outside has G(k, j) of order
# 1e-30 r^(k + 1 - j/2), and the row's anchor (FLOAT32_ANCHOR_OUT) order 1e-2 r_a^k,
# so what is dropped stays below 1e-14 of the row while (max width / min width)^k
# <= 1e16 in the basis (FLOAT32_WIDTH_RATIO); wider spreads take float64.
FLOAT32_EDGE_FLUSH = 64.0
FLOAT32_WIDTH_RATIO = {k: 10.0 ** (16 / k) for k in (1, 2, 3, 4)}


# ---------------------------------------------------------------- window moments
# (tsallis.core.window; r = RBF width / support half-width)

# The closed form (evaluated in float64) is used when r <= CLOSED_MAX_R[k] and the
# RBF centre lies at most CLOSED_MAX_OUT[k] RBF widths outside the support: there
# its elementwise relative error is <= 3e-13 (measured against the Gauss-Jacobi
# windows over r and the centre). Farther out it is kept where its measured
# relative error, below 1e-16 (1 + d)^(2k+3) max(1, 5r)^(k-1) (d widths out,
# k = 1..4, d <= 16, r <= 2), is negligible within the row.
CLOSED_MAX_R = {1: 2.0, 2: 0.5, 3: 0.2, 4: 0.2}
CLOSED_MAX_OUT = {1: 2.0, 2: 2.0, 3: 2.0, 4: 1.0}
# ... but the closed form's m2c cancels by about r^4 (its terms grow like r while m2c
# falls like r^-3): at k = 1, row-relative against mpmath over centres in [-4, 4], 3.6e-15
# at r = 0.75, 7.0e-15 at 1, 5.1e-14 at 1.5, 3.9e-13 at 2 (rho and m1 within 1e-14).
# From CLOSED_WIDE_R[k] on, the wide expansion (WIDE_NODES) replaces all three where
# |u (u - 2c)| / (2 r^2) <= CLOSED_WIDE_REACH on the support, which holds every RBF
# within CLOSED_MAX_OUT widths of it: measured within 7.9e-16 there (see WIDE_NODES).
# Its price, chosen for float64's accuracy: 1.5-1.7 x on float64 bases with many RBFs
# one to two half-widths wide (docs/measurements.md); float32's own closed form has none.
CLOSED_WIDE_R = {1: 1.0}
CLOSED_WIDE_REACH = 5.0
# The wide-RBF expansion's symmetric Gauss-Jacobi rule (tsallis.core.window): its
# integrand e^(p + q) - 1 is smooth on the support, |p + q| <= 1 (CLOSED_WIDE_REACH
# where it refines a closed form). Against mpmath, k = 1 to 4, r from 0.71 to 2, centres
# to 1 + 3r: 16 nodes within 7.9e-16 of each moment's largest over the centres, as 64
# were (also at alpha = 1.1 and 3, r to 10); 12 nodes 2.3e-14 at r = 0.71, 10 nodes 4e-11
WIDE_NODES = 16
# The row-shared rule: SHARED_NODES Gauss-Jacobi nodes (SHARED_NODES_WIDE when every
# RBF in the row is at least SHARED_WIDE_R wide: measured as accurate) for RBFs at
# least SHARED_MIN_R half-widths wide; measured absolute error <= 1e-16 / r for
# centres up to SHARED_MAX_OUT widths outside (alpha = 1.01, 1.2, 3).
SHARED_NODES = 64
SHARED_NODES_WIDE = 32
SHARED_WIDE_R = 0.2
SHARED_MIN_R = 0.1
SHARED_MAX_OUT = 8.0
# An RBF well inside the support: the Gaussian's own Gauss-Hermite rule with
# HERMITE_NODES nodes (outermost 6.63 widths from the centre), for centres at least
# HERMITE_MIN_EDGE widths inside both edges where the escort exponent m is at most
# HERMITE_MAX_BEND times that distance (the escort then bends little over the RBF).
# Measured against mpmath at 50 digits (about 150 of 4000 random r in [1e-5, 0.3]
# and centres per alpha, the hardest first; error relative to the element's
# |rho| + |m1| + |m2c|): <= 1.2e-14 for alpha in {1.1, 1.2, 1.7, 3, 5} at any m/d (m <= 4
# there); with m/d <= 0.5: 1.7e-15 (alpha = 1.05), 3.2e-13 (1.01), 4.6e-14 (1.001),
# 5.9e-14 (1.0001); at m/d <= 2 alpha = 1.001 reaches 3.5e-5, hence the bound.
HERMITE_NODES = 16
HERMITE_MIN_EDGE = 8.0
HERMITE_MAX_BEND = 0.5
# An RBF centred at least HERMITE_MIN_EDGE widths outside the support whose Gaussian
# tail (a bound on all three moments when the escort exponent m >= 0, alpha <= 2) is at
# most FAR_NEGLIGIBLE times each moment's largest magnitude in its row is left at 0.
FAR_NEGLIGIBLE = 1e-17
# 2D sparsemax radial moments: closed form up to this RBF width (support units),
# measured within 1.1e-13 of Gauss-Legendre windows (centres up to 8 widths out);
# Gauss-Legendre with RADIAL_NODES nodes on [0, 1] beyond.
RADIAL_MAX_R = 2.0
RADIAL_NODES = 16
# Gauss-Jacobi window of one element: where the integrand is within e^-WINDOW_EXP
# of its peak on the support, WINDOW_NODES nodes; an edge closer to the window
# than EDGE_PULL times its length joins it (the rule then carries (1 -+ u)^m).
# The peak: PEAK_STEPS safeguarded Newton steps; each window end LEVEL_STEPS
# Newton steps from outside (concavity keeps them outside).
WINDOW_EXP = 80.0
WINDOW_NODES = 64
EDGE_PULL = 0.25
PEAK_STEPS = 12
LEVEL_STEPS = 10
# Elements per piece of the node-heavy branches, and of the elementwise closed forms.
NODE_CHUNK = 1 << 15
CLOSED_CHUNK = 1 << 21
# Torch 1D attention: the forward runs in pieces of about ROW_CHUNK elements (rows x
# basis functions) in eager mode, so its float64 temporaries stay within a few MB.
ROW_CHUNK = 1 << 17
# Torch 1D attention on CPU in eager mode, at an alpha without a closed form: calls of
# at most this many elements (rows x basis functions) run the core through NumPy,
# whose per-operation cost is about a fifth of Torch's on small arrays. Measured,
# forward + backward with N = 64: NumPy 1.6-2.4x faster from 64 to 2048 elements at
# alpha = 1.2, 1.7 and 3; at 4096 faster at 1.2 and 1.7 but 1.2x slower at 3.
HOST_ELEMENTS = 1 << 11
# torch_bridge.BetaGaussian.log_prob on CPU in eager mode without gradients: calls of
# at most this many values (batch x dimension) run on NumPy. Measured, 3D float32:
# 1024 x 3 values 0.93-0.94x the published-style peer through NumPy (1.5x in Torch);
# 100,000 x 3 values were faster in Torch (0.80x the peer).
HOST_VALUES = 1 << 12
# Kernel families (tsallis.core.kernel): bracketed Newton steps per support boundary.
KERNEL_NEWTON_STEPS = 10
# Panels are no wider than this fraction of min(bandwidth, RBF widths, base std).
PANEL_FRACTION = 1.0
# Panel chunks are at most KERNEL_SPAN reaches wide (see KERNEL_UNDERFLOW): wider chunks
# keep more inducing points, narrower ones pay per-operation overhead (measured on
# bandwidth 0.002, 500 points: 170 ms at 0.5, 105-113 ms from 1 to 4).
KERNEL_SPAN = 2.0
# exp(-x) is exactly 0 in float64 from x = 745.2: a kernel point farther than that from
# every node of a panel chunk (Gaussian: (d / h)^2 / 2 > this; Laplace: |d| / h > this)
# contributes exact zeros and is left out of the chunk (tsallis.core.kernel.kernel_band).
KERNEL_UNDERFLOW = 746.0
# Steep f~: the kernel's share of the panel width shrinks with the envelope E, the
# largest sum_i |gamma_i| k(t_j, t_i) over rows and inducing points t_j. A Gaussian
# kernel's exp(f~) peaks over about bandwidth / sqrt(E): the width shrinks by
# sqrt(E / STEEP_UNIT). A Laplace kernel's decays from its cusps over bandwidth / E:
# by E / STEEP_UNIT. (Measured: both within 1e-13 of an adaptively refined reference
# for gamma up to 1000 N(0, 1) on 12 inducing points, alpha in {1, 1.0005, 1.5, 2, 3}.)
STEEP_UNIT = 16.0
# A Gaussian base: panels no wider than BASE_SLOPE_WIDTH / (largest slope of log q0 on
# [a, b]) (and the std), so exp(log q0) changes by at most e^4 over a panel. Measured
# with 16 nodes, mean 50 std outside [0, 1] on either side, alpha in {1, 1.5, 2}: Z
# within 2.4e-13 of 60-digit mpmath (std-wide panels were 3.8e-8 off).
BASE_SLOPE_WIDTH = 4.0
# At most MAX_PANELS panels: more is refused with a ValueError naming a bandwidth
# (or RBF width, or base std) that works.
MAX_PANELS = 1 << 16
# Memory: panels are integrated in chunks of about KERNEL_CHUNK float64 values per
# intermediate (nodes x (M + N + 8 rows); per-row boundary pieces in blocks of
# nodes x (M + N)); see KERNEL_KEEP for when the Torch face checkpoints them.
KERNEL_CHUNK = 1 << 22
# Torch kernel attention keeps the whole autograd graph when it holds at most KERNEL_KEEP
# float64 values (256 MB; tsallis.core.kernel.graph_values); above, each chunk is
# checkpointed (recomputed in the backward pass, which then costs about twice as much).
KERNEL_KEEP = 1 << 25
# A full panel whose end lies within NEAR_ROOT panel widths of a support boundary
# just outside it (secant estimate through the end and the first node) holds a
# nearly singular [u]_+^power, power not an integer: each half of it is graded
# towards its end in pieces shrinking by GRADE_RATIO, so that every piece lies at
# least 1/3 of its width from the root (16 Gauss-Legendre nodes then leave 5e-16):
# GRADE_MARGIN levels past the root's distance (its secant estimate; a piece nearer
# the end than the root is, by 4^3 or more, sees it at 64 or more of its widths), at
# most GRADE_LEVELS (down to 1e-16 of the half).
NEAR_ROOT = 1.0
GRADE_RATIO = 4.0
GRADE_LEVELS = 27
GRADE_MARGIN = 3
# Mahalanobis distances with at most SMALL_SOLVE unknowns run as forward substitution
# in elementwise ops (same arithmetic as LAPACK's trsv). Torch's batched LAPACK call
# costs about 85 us for 1024 systems of 3 and broadcasts one factor against 100,000
# right-hand sides by copying it; substitution broadcasts for free.
SMALL_SOLVE = 4


# ---------------------------------------------------------------- accuracy tiers


@dataclass(frozen=True)
class Accuracy:
    """The node counts and thresholds of the quadrature regimes for one target precision.

    window_moments takes one: FLOAT64 (the constants above) for float64 results,
    FLOAT32 for results the Torch face rounds to float32 or below.
    """

    window_exp: float
    window_nodes: int
    hermite_nodes: int
    hermite_min_edge: float
    hermite_max_bend: float
    shared_nodes: int
    shared_nodes_wide: int
    far_negligible: float
    peak_steps: int
    level_steps: int


FLOAT64 = Accuracy(
    WINDOW_EXP,
    WINDOW_NODES,
    HERMITE_NODES,
    HERMITE_MIN_EDGE,
    HERMITE_MAX_BEND,
    SHARED_NODES,
    SHARED_NODES_WIDE,
    FAR_NEGLIGIBLE,
    PEAK_STEPS,
    LEVEL_STEPS,
)
# Results rounded to float32 (or below) need the quadrature only to about 1e-8: windows
# where the integrand is within e^-22 of its peak, 28 nodes, 6 + 3 Newton steps (4 + 2
# were measured as accurate); 8 Gauss-Hermite nodes; a 32-node (24 wide) row-shared
# rule; far RBFs below 1e-10 of the row's largest left at 0. Measured against FLOAT64
# (itself within 1e-12 of mpmath), 12 x 400 rows of 48 RBFs, widths 1e-5 to 1,
# centres in [-1, 2], sigma^2 in [1e-8, 1e2], alpha in {1.01, 1.02, 1.05, 1.1, 1.2,
# 1.3, 1.7, 2.2, 3, 5}: every moment within 4e-8 of its row's largest, except m2c at
# alpha <= 1.02 (2e-7: its u^2 - E[u^2] cancels under the narrow escort); the
# shallower e^-20 with 24 nodes reached 1e-6 there, 16 nodes 1e-3. The float32 bars
# are 1e-6 (rho) and 1e-5 (J), row-relative. Computation stays in float64: the edge
# distances need it (eps32 / r RBF widths of error), and so does the escort power.
# Windows with m >= SMOOTH_EXPONENT (alpha < 1.031) keep the FLOAT64 settings
# (window_moments): at alpha = 1.0001 the e^-22 window left m2c 1e-5 off. With that,
# alpha = 1.0001, 1.001, 1.01 and 1.05 measured 1e-10, 2e-11, 1e-12 and 6e-9.
FLOAT32 = Accuracy(
    window_exp=22.0,
    window_nodes=28,
    hermite_nodes=8,
    hermite_min_edge=HERMITE_MIN_EDGE,
    hermite_max_bend=HERMITE_MAX_BEND,
    shared_nodes=32,
    shared_nodes_wide=24,
    far_negligible=1e-10,
    peak_steps=6,
    level_steps=3,
)

# Finite alpha-entmax: calls on at most SORT_ELEMENTS[alpha] values (rows x entries) take
# the sort-based closed forms at alpha = 2 and 3/2 (tsallis.core.discrete.entmax_map);
# larger ones take Newton's method on the threshold, which needs no sort. On the CPU the
# sort is NumPy's (Torch's took 10 to 20 times longer: (32, 1000) float32 1.04 ms against
# 0.05) and the per-size thresholds are computed for the first SORTED_PREFIX sizes, and
# for every size only where a row's support fills them (core.discrete._sorted_threshold).
# Measured (torch 2.13, CPU, float32, forward + backward, sort / Newton, us): sparsemax
# (32, 1000) 531 / 719, (1024, 32) 664 / 889, (128, 1000) 929 / 1039, (4096, 32) 1233 /
# 1750, (1024, 128) 1075 / 1227, (256, 1000) 1484 / 1493, (1024, 1000) 4880 / 4098;
# 1.5-entmax (32, 1000) 613 / 800, (64, 1000) 784 / 870, (8, 8192) 742 / 895, (128, 1000)
# 1133 / 1102, (2048, 32) 1221 / 1240, (4096, 32) 1851 / 1790; (1, 10) 202 / 302 and 237
# / 426. Off the CPU the sort is taken at any size (an H100, (1024, 1000): sparsemax 2.2
# ms against 3.5 by Newton, 3/2 2.3 against 10.0). NumPy arrays (float64, one thread)
# take the sort on at most NUMPY_SORT_ELEMENTS values: sparsemax (32, 1000) 485 / 496
# us, (64, 1000) 1280 / 1020, (1024, 32) 474 / 566; 1.5-entmax (32, 1000) 601 / 824,
# (1024, 32) 1360 / 911, (128, 1000) 2569 / 2742.
SORT_ELEMENTS = {2.0: 1 << 17, 1.5: 1 << 16}
NUMPY_SORT_ELEMENTS = 1 << 15
# Tensors whose rows hold from SORT_ROW_LENGTHS[alpha][0] to [1] entries take the sorted
# map at any size: the Newton loop's per-row bookkeeping (dozens of operations on every
# row's values at every step) costs more there than the sort of short rows. Measured
# (torch 2.13, CPU, float32, forward + backward, 400 000 and 1 600 000 values, Newton /
# sort, ms): sparsemax K = 2 6.6 / 11.8 and 26.2 / 45.8 (then from 4), K = 4 8.2 / 7.4
# and 29.9 / 29.4, 8 7.7 / 5.9 and 25.0 / 20.5, 16 4.1 / 2.9 and 12.8 / 10.1, 32 3.1 /
# 2.6 and 8.4 / 7.6, 64 2.6 / 2.3 and 6.8 / 7.1; 1.5-entmax K = 2 23.2 / 14.0 and 97.1 /
# 55.9, 4 15.8 / 9.4 and 64.2 / 38.2, 8 10.8 / 10.9 and 35.8 / 29.7, 16 6.0 / 6.8 and
# 19.7 / 19.1, 32 3.7 / 6.3 and 11.2 / 17.2. Since rows of at most TORCH_SORT_LENGTH
# entries are sorted by Torch (below), sparsemax takes the sort from 2 entries too
# (2026-11-28, float32 (100000, K), one process alternating, sort / Newton / the entmax
# package's sparsemax: K = 2 3.3-4.6 / 4.2-5.8 / 3.7-5.2, 3 4.3-6.1 / 7.4-10.2 /
# 5.2-7.2, 4 5.4-6.6 / 8.8-9.7 / 6.4-8.1; 1.5-entmax's sort 4.3-6.7 / 6.5-7.0 /
# 7.7-9.1 against the package's entmax15 3.9-6.1 / 5.4-5.8 / 6.7-8.1).
SORT_ROW_LENGTHS = {2.0: (2, 32), 1.5: (2, 8)}
# CPU tensors with rows of at most TORCH_SORT_LENGTH entries are sorted by Torch, not by
# NumPy on a view (core.discrete._decreasing): NumPy's sort costs about 38 ns a row
# whatever its length up to 16 (float32 (100000, K), K = 2 / 3 / 4 / 8 / 16: NumPy 3.8 /
# 4.0 / 4.0 / 3.9 / 3.8 ms, Torch's descending sort 0.87 / 1.16 / 1.93 / 4.30 / 10.8).
TORCH_SORT_LENGTH = 4
SORTED_PREFIX = 64
# Rows of at most SHARED_COUNTING entries take the prefix sizes 1..K of the sorted maps
# from a small cache (8 arrays of at most 512 KB at float64) instead of an arange per
# call: one kernel launch less on a GPU (core.discrete._prefix_sums).
SHARED_COUNTING = 1 << 16
# CPU tensors of at most NUMPY_VIEW_ELEMENTS values in at most NUMPY_VIEW_ROWS rows take
# the sort-based maps on NumPy views of themselves (core.discrete.entmax_map): the same
# code in NumPy, whose operations on small arrays cost about 1 us against Torch's 3 to 5.
# Measured (torch 2.13, float32, forward + backward, one process alternating, Torch /
# NumPy views, us): sparsemax (1, 10) 223 / 179, (16, 16) 240 / 196, (32, 1000) 569 /
# 482, (256, 128) 657 / 582; 3/2 (1, 10) 271 / 208, (16, 16) 300 / 234, (32, 1000) 655 /
# 575, (256, 128) 834 / 775. Many short rows lost (NumPy's per-row sorts and cumulative
# sums, one thread): 3/2 (1024, 32) 989 / 1066, (512, 64) 1008 / 1046, (2048, 32) 1234 /
# 1781; from 2^16 values it was within 5% either way, but for long rows ((8, 8192) 798 /
# 738 at 3/2).
NUMPY_VIEW_ELEMENTS = 1 << 15
NUMPY_VIEW_ROWS = 256
# ... and at most NUMPY_NEWTON_ELEMENTS values take the Newton loop (a Python-float alpha
# other than the sorted maps') on NumPy views, for the same reason: each of its steps is
# a few dozen operations. Measured (torch 2.13, AMD EPYC, float32, forward + backward,
# one process alternating, Torch / NumPy views, us): (1, 10) at alpha = 1.3 660 / 548,
# 0.8 676 / 478, 3 546 / 410; (1, 1000) 1.3 949 / 764, 3 1425 / 950; (8, 64) 1.3 754 /
# 571, 1.7 904 / 721, 3 1779 / 1145; (32, 128) 1.3 794 / 680; (64, 128) 1.3 828 / 760,
# 1.7 858 / 819 (NumPy's exp2 floored, arrays.EXP2_LEAST; before that 847 / 876). From
# 2^14 values NumPy's one thread lost: (16, 1000) 1.7 897 / 907, (32, 1000) 1.3 1023 /
# 1097, 1.7 1036 / 1184; (256, 32) was even (768 / 772 at 1.3).
NUMPY_NEWTON_ELEMENTS = 1 << 13

# alpha-entmax's Newton iteration (core.discrete.entmax_newton) takes Halley steps
# (one more pass each, for d^2 p / dc^2) on its first HALLEY_STEPS steps at a
# Python-float alpha <= 3/2: N(0, 1) scores (1024 x 1000) needed 4 evaluations
# instead of 5 at alpha = 1.3, in a float64 simulation of the iteration; 1 step saved
# less, 3 no more. The eager loop on the in-place state takes them only below
# BASE_FORM_ALPHA, and on a CPU tensor from there to 4/3 at every step, ending on a
# first-order finish instead of its last evaluation (core.discrete.entmax_newton's
# "finishing", _Buffers.finished). Measured for that (torch 2.13, AMD EPYC Zen 4,
# float32 (1024, 1000), forward + backward, one process alternating without / with, ms):
# N(0, 1) rows at 1.3 6.09 / 5.44, 6.29 / 5.67, 6.81 / 6.30 (5 evaluations of the whole
# rows / 3), 1.25 6.36 / 5.80 (5 / 3), 4/3 7.10 / 7.14 (5 / 4); N(0, 0.3^2) at 1.3 5.48
# / 5.26 and 5.54 / 5.59 (4 / 3); N(0, 3^2) and N(0, 2^2), narrowed after the first
# step (Newton's then), 5.04 / 5.00, 5.27 / 5.29, 5.45 / 5.46; float64 N(0, 1) at 1.3
# 17.7 / 16.2 and 20.0 / 19.4 (6 / 4); other shapes at 1.3, N(0, 1): (16, 1000) 0.87 /
# 0.81, (32, 1000) 1.01 / 0.90, (64, 512) 1.12 / 1.03, (256, 256) 1.33 / 1.24, (4096,
# 256) 6.52 / 6.01, (8192, 128) 7.08 / 6.70, (256, 4096) 6.76 / 6.03, (64, 16384) 6.27 /
# 6.26; (32, 1000) at 1.25 1.04 / 0.92 and 4/3 1.14 / 0.98, (4096, 256) 4/3 7.52 /
# 6.66, (256, 4096) 1.25 6.15 / 6.21; N(0, 3^2) (256, 4096) 4.43 / 4.50, (4096, 256)
# 7.20 / 6.79. Below 1.25 ("offset": 3 evaluations already) Halley's step at every
# evaluation lost 0.2-0.4 ms (1.1, 1.2).
HALLEY_STEPS = 2

# alpha-entmax's Newton loop forms 1 + (alpha - 1) f (f = z - max - c) and takes its
# log2 at a Python-float alpha in [BASE_FORM_ALPHA, 2); below, it keeps (alpha - 1) f
# and takes log1p, which keeps the relative precision of a small (alpha - 1) f
# (core.discrete._Buffers). Rounding 1 + (alpha - 1) f to an absolute eps moves p by
# a relative eps / (alpha - 1); Torch's log1p took 0.35 ms on a float32 (1024, 1000)
# array, log2 0.14.
BASE_FORM_ALPHA = 1.25

# The eager Newton loop at a Python-float alpha in [PREFIX_ALPHA, 2] on rows of at
# least PREFIX_MIN_LENGTH entries starts from the shift of each row's largest entries
# alone: PREFIX_WIDTH[alpha] of them (sort-based closed forms), for other alphas 1 /
# PREFIX_SHARE of the row (a Newton loop of their own, on calls of at least
# COMPACT_ELEMENTS values), at most 1 / PREFIX_SHARE and at least 8
# (core.discrete._prefix_start and _prefix_map). That shift is exact where they hold the
# support; the full loop then takes one evaluation for the row at 2 and 3/2, and at other
# alphas p is evaluated on those entries alone and scattered. N(0, 1) rows of 1000 have
# supports of at most 11 entries at alpha = 2, 41 at 3/2, 182 at 1.3, 594 at 1.2.
# Measured (float32, forward + backward, with / without the start, one interleaved
# run each; 2^21 values as (2^21 / K, K) unless said):
# - (1024, 1000): alpha = 1.3 8.7-8.8 / 10.2-10.3 ms, 3/2 6.5-6.6 / 6.6-6.7 (a prefix
#   of 16, 32, 64 and 128 took 8.0, 7.1, 6.5 and 7.2 ms), 1.7 11.6 / 13.5, 1.25 10.7 /
#   10.8, 1.2 14.8 / 14.2, 2 5.6 / 5.95 (the 8 largest by topk);
# - 3/2: K = 64 to 1024 25.6, 21.8, 21.3, 16.7, 14.5 / 19.3, 16.4, 16.4, 14.6, 14.0 ms,
#   768 16.0 / 14.2, 2048 12.7 / 13.2, 8192 11.9 / 14.0 (its evaluations have no
#   transcendental: the start pays on long rows only);
# - 1.3: K = 64 to 256 36.0, 30.3, 26.4 / 28.5, 24.0, 22.7 (and 24.5 / 21.6), 512 21.0 /
#   20.9 (and 19.6 / 20.5), 768 20.8 / 21.5, 1024 19.4 / 21.0, 8192 18.4 / 22.8;
# - 1.7 and 1.9 gained at every K from 256 (1.7: 22.3 / 26.9 to 21.8 / 27.3), 1.25 lost
#   at 256 and 512 (26.4 / 21.9, 21.4 / 18.2): hence PREFIX_ALPHA;
# - sparsemax against the earlier start from the 8 largest (topk): (100000, 64) 52-53 /
#   63-64 ms, (16384, 128) 15.2-15.6 / 18.9-19.4, (256, 4096) 6.0-6.2 / 5.9-6.1.
# Re-checked after the held rows, the partition of max - z's bits and the fused backward
# (one process, alternating, changed / current value): 3/2 from 128 entries (1024, 1000)
# 4.84-4.85 / 4.65-4.70 ms, (4096, 256) 6.8-6.9 / 5.6; others from 128 entries (8192,
# 128) 10.7 / 9.0, from 1024 (1024, 1000) 7.70 / 6.45; PREFIX_SHARE 5 at 1.3, (1024,
# 1000): N(0, 1) rows 5.9-6.1 / 6.1-6.5, but N(0, 0.7^2) rows (supports of 141 to 300)
# 7.4 / 6.8, so a quarter it stays. The limit sits just below 1.3 so that 1.3 held as a
# float32 (a learned alpha: 1.29999995) takes the start as 1.3 does.
PREFIX_ALPHA = 1.29
PREFIX_WIDTH = {2.0: 32, 1.5: 64}
PREFIX_SHARE = 4
PREFIX_MIN_LENGTH = {2.0: 32, 1.5: 2048}
PREFIX_MIN_LENGTH_OTHERS = 512
# ... and on a CPU tensor from BASE_FORM_ALPHA to GROUPED_TENSOR_ALPHA only where the
# rows' median spread (alpha - 1)(max - mean) lies within PREFIX_ROOTED_SPREAD (its
# lower end only on rows shorter than PREFIX_ROOTED_LONG; core.discrete.
# _prefix_spread_gated). Narrower rows have supports larger than the prefix (N(0,
# 0.3^2) rows of 1000 at 1.3: 74% of the row, N(0, 0.5^2) 39%), so its partition and
# loop are lost; wider ones have supports of a few entries, which the loop narrows to
# after its first step, so the partition costs more than it spares. Measured (torch
# 2.13, AMD EPYC Zen 5, NumPy's partition_cost 1.7, float32, forward + backward, one
# process alternating, medians of 30, ms, prefix / gated): (1024, 1000) N(0, sigma^2)
# at 1.3, sigma = 0.3 5.96 / 4.03, 0.5 5.58 / 4.17 and 5.53 / 4.12, 1 4.57 / 4.54 and
# 4.48 / 4.46 (kept: spread 0.96), 2 4.68 / 4.68 (kept), 4 4.79 / 3.95 and 5.09 / 4.38;
# 1.29 sigma = 0.3 5.82 / 4.12; 1.33 0.5 7.98 / 5.53; 1.35 0.5 4.95 / 4.23, 1 4.47 /
# 4.39 (kept), 2 5.15 / 4.93; (512, 2048) 0.3 5.65 / 4.20; (2048, 512) 0.3 7.64 / 6.21;
# (256, 4096) 0.3 5.25 / 4.14, 3 4.18 / 3.78; (64, 16384) 3 4.67 / 4.36. Without the
# length limit, long narrow rows lost (their supports fit the prefix: N(0, 0.3^2) rows
# of 16384 at 1.3 hold 22%): (64, 16384) 0.3 4.44 / 6.42, 0.5 4.64 / 6.95, (128, 8192)
# 0.3 6.22 / 6.71, 0.5 4.93 / 6.13. Without the prefix on rows of middling spread,
# 1.35 N(0, 1) lost 20-29% (six processes).
PREFIX_ROOTED_SPREAD = (0.6, 1.5)
PREFIX_ROOTED_LONG = 8192

# The prefix start above partitions each row (core.arrays.smallest, smallest_columns),
# which costs what NumPy's select costs on the CPU at hand: the start is taken where
# core.arrays.partition_cost (the partition against a cumulative sum, measured once per
# process) is at most PARTITION_RATIO, or as PARTITION_PAYS says where it is set (True
# or False: the same maps either way, to the loops' tolerance, but not bitwise).
# Measured (torch 2.13, NumPy 2.4.6, float32 (1024, 1000), forward + backward, one
# process, alternating with / without the start), on an AMD EPYC (Zen 4) with NumPy's
# AVX-512 select (partition_cost 8.7-9.1): sparsemax 6.17 / 3.06 ms, alpha = 1.3 9.56 /
# 7.82, 1.7 10.00 / 8.78; on the same machine with its AVX2 select (1.6): 3.04 / 3.11,
# 7.05 / 8.69, 6.94 / 9.11. The start pays at 1.3 up to a ratio of about 5 (by
# interpolation), at 2 up to about 1.6: hence 4.
PARTITION_RATIO = 4.0
PARTITION_PAYS: bool | None = None

# The host loop's log2 of its state (alpha from BASE_FORM_ALPHA to 2, core.discrete._mass)
# on a CPU tensor is NumPy's, on views, where NumPy's log2 measured at most
# NUMPY_LOG2_RATIO times Torch's (core.arrays.numpy_log2_pays, once per process), or as
# NUMPY_LOG2 says where it is set (the same values to an ulp or so, not bitwise).
NUMPY_LOG2_RATIO = 0.75
NUMPY_LOG2: bool | None = None

# On a float32 CPU tensor the host loop's "base" state sets the log2 of its clamped
# entries to -inf before the exp2 where their argument would lie in Torch's slow band
# (alpha in (4/3, 3/2); core.discrete._slow_exp2_band). Float32 (1024, 1000), forward +
# backward, one process alternating without / with (torch 2.13, AMD EPYC Zen 4), ms:
# alpha = 1.35 on N(0, 1) rows 7.20 / 6.73, 7.42 / 6.97, 7.66 / 7.26; 1.38 on N(0,
# 0.3^2) 8.42 / 8.06; 1.42 6.56 / 6.51, 6.92 / 6.78; 1.45 6.98 / 6.86, 6.25 / 6.13;
# the maps are the same bit for bit (exp2 of both is 0).
EXP2_BAND = True

# The eager loop on the host (NumPy, CPU tensors) at a Python-float alpha in
# [GROUPED_ALPHA, 2], on rows of at least GROUPED_MIN_LENGTH entries, also starts from
# Jensen's bound on the maxima of at most GROUPED_WIDTH groups of each row's columns
# (core.discrete._grouped_shift), where it has no prefix start (rows whose prefix does
# not hold their support resume from the prefix's shift; the prefix's own loop takes it
# too); CPU tensors not at 3/2, nor from BASE_FORM_ALPHA to GROUPED_TENSOR_ALPHA. The
# bound cost 0.4-0.6 ms at (1024, 1000) and saved one evaluation of the whole rows below
# 1.35, two to four above. Measured (torch 2.13, NumPy 2.4.6, AMD EPYC Zen 4, float32
# unless said, glibc malloc in steady state, one process alternating without / with,
# medians of 15-100, in ms):
# - CPU tensors, forward + backward, (1024, 1000), no prefix start, Torch's log2: alpha =
#   1.35 8.36 / 7.65, 1.4 9.51 / 8.39, 1.45 9.08 / 7.61, 1.55 8.18 / 6.88, 1.6 8.62 /
#   7.37, 1.7 8.42 / 6.96, 1.8 8.81 / 7.02, 1.95 8.58 / 6.24, 2 3.02 / 2.81; but 3/2
#   2.90 / 3.20 (no transcendental: two fewer evaluations did not pay), 1.3 6.67 / 6.63
#   and 7.71 / 7.95, 1.25 8.54 / 8.86, and below 1.2 it lost 0.5-0.6 ms (0.5, 0.9, 1,
#   1.0001, 1.05, 1.1, 1.15: the mean start is close where supports are wide);
# - the same with NumPy's log2 (NUMPY_LOG2): 1.35 7.35 / 6.79, 1.45 8.10 / 7.18, 1.7 7.46
#   / 6.37, 2 3.42 / 3.23; and 1.2 (the "offset" form, log1p) / 1.25 / 1.3 at (1024,
#   1000) 7.19 / 6.53, 5.26 / 5.47, 5.40 / 5.64; (512, 2048) 7.24 / 6.40, 5.41 / 5.50,
#   5.43 / 5.38; (256, 4096) 7.41 / 6.56, 5.70 / 5.96, 6.08 / 5.41; (64, 16384) 7.41 /
#   6.57, 6.38 / 5.96, 6.27 / 5.75: hence the band left out for tensors;
# - other shapes (2^20 values), no prefix start, alpha = 2 / 1.7: (8192, 128) 3.59 / 3.48
#   and 9.64 / 8.76, (4096, 256) 3.38 / 3.21 and 8.97 / 7.69, (256, 4096) 3.24 / 2.74
#   and 9.01 / 6.65, (64, 16384) 3.07 / 2.31 and 9.22 / 6.89; GROUPED_WIDTH 32 and 128
#   did no better overall, 128 worse on short rows (its sort);
# - (1024, 1000) with the prefix start (its own loop on each row's largest quarter):
#   1.7 9.42 / 8.99, 1.9 10.13 / 9.38, 1.3 8.41 / 8.90;
# - NumPy arrays (tsallis.discrete.entmax, forward alone; evaluations on one thread):
#   (1024, 1000) float32 1.2 71.9 / 64.9, 1.25 39.3 / 33.7, 1.3 39.4 / 33.7, 1.35 34.8 /
#   28.1, 3/2 10.7 / 8.9, 1.7 36.0 / 25.4, 2 11.8 / 5.4, but 1.15 23.7 / 27.6 and 1.1
#   11.9 / 12.7; float64 1.3 60.3 / 52.4, 1.7 52.2 / 38.7; (256, 4096) float32 1.3 40.8
#   / 27.6.
# - with Halley's steps and the finish up to 1.49 (core.discrete._FINISH_ALPHA), CPU
#   tensors, forward + backward (1024, 1000), NumPy's log2, without / with, N(0, 1) /
#   N(0, 0.3^2) rows: 1.35 8.26 / 9.31, 9.15 / 9.84, 14.92 / 15.23 and 7.85 / 8.12,
#   6.48 / 6.55, 13.99 / 15.69 (the bound no longer pays there: hence 1.36); 1.37 10.17
#   / 7.94, 16.83 / 9.27 and 6.43 / 6.64, 14.23 / 13.40 (its closer first step lets the
#   loop narrow the rows); 1.4 8.28 / 7.05, 7.14 / 7.54 and 5.91 / 5.56, 6.70 / 6.07;
#   1.45 10.84 / 7.49 and 8.90 / 8.39; 1.48 10.19 / 7.07 and 8.76 / 8.04.
GROUPED_WIDTH = 64
GROUPED_MIN_LENGTH = 128
GROUPED_ALPHA = 1.2
GROUPED_TENSOR_ALPHA = 1.36

# Where the groups' bound above is not taken (CPU tensors from BASE_FORM_ALPHA to
# GROUPED_TENSOR_ALPHA, alphas whose evaluation takes a root or a transcendental), the
# eager loop's first shift also takes one Halley step on the mass of the maxima of
# MAXIMA_STEP_WIDTH groups of each row's columns (core.discrete._maxima_step_shift),
# on rows whose median spread (alpha - 1)(max - mean) is within MAXIMA_STEP_SPREAD.
# Evaluations of the whole rows (F) and the finish (f), float32 (1024, 1000) N(0,
# sigma^2) rows, without -> with: alpha = 1.3, sigma = 0.5 and 1: F F F f -> F F f; 1.33
# and 1.35, sigma = 1: F F F F -> F F f, sigma = 0.5: F F F f -> F F f; sigma = 0.3
# (spread about 0.3) F F F either way, and 2 to 10 (spread 1.9 and more) F then 3 to 4
# steps on narrowed rows, where a start above the shift (Halley's step on the maxima
# overshot by up to 0.02 there) forbade the narrowing: F F F. Forward + backward (torch
# 2.13, AMD EPYC Zen 4, one process alternating, medians of 30 x 10, ms, without /
# with): 1.3 N(0, 0.5^2) 5.77 / 5.65, N(0, 1) 5.75 / 5.58 and 11.8 / 9.3 (a slow
# process); 1.35 N(0, 0.5^2) 5.66 / 5.39, N(0, 1) 6.46 / 5.53; rows left alone (N(0,
# 0.3^2), N(0, 2^2)) 1-2.5% slower (the same script, A against A: within 1%). Width 64
# left the start up to 0.24 below the shift (two evaluations then did not reach the
# finish on every row), 128 0.14, 256 0.10 (not timed).
MAXIMA_STEP = True
MAXIMA_STEP_WIDTH = 128
MAXIMA_STEP_SPREAD = (0.4, 1.5)

# The eager Newton loop (a Python-float alpha, calls of at least COMPACT_ELEMENTS
# values) finishes its last rows apart once at most a fraction STRAGGLERS of them is
# left (core.discrete.entmax_newton): otherwise every step evaluates every row again.
# Measured (float32 (1024, 1000), forward + backward): sparsemax 7.5 -> 5.5 ms with the
# start above (6.8 with the start alone); a quarter cost alpha = 1.5 200 MB more at
# (65536, 1000), where 17% of the rows were left, and saved 0.1 ms. Above 2 too
# (2026-11-28; their refinement then skips those rows): N(0, 0.1^2) rows at 5, packed,
# took all 64 steps over every row while two were left (forward alone 258 -> 107 ms,
# one run each).
COMPACT_ELEMENTS = 1 << 16
STRAGGLERS = 0.125

# Above 2 (float64, a power per entry: some 3 ns a value an evaluation), the eager loop
# and its refinement also leave their rows apart once at most half of them is left and
# the rows done would cost at least DONE_ELEMENTS values an evaluation, each row counted
# as its entries plus ROW_ELEMENTS (its bookkeeping: dozens of NumPy operations a step
# on every row's values): every further step over the whole rows would evaluate them
# again, where leaving the others apart costs a call (about 1 ms) and a copy of their
# rows (core.discrete._left_apart; at most half: the calls apart hold at most as many
# rows as the first). Measured (2026-11-28, torch 2.13, AMD EPYC, 2 threads, forward
# alone, float32 N(0, 1) rows, computed in float64), in one process alternating, without
# / with it (the refinement's stragglers apart in both): (100000, 10) at 2.5 / 5 / 10
# 89 / 185 / 266 -> 81 / 114 / 135 ms; (100000, 64) 724 / 940 / 1623 -> 536 / 590 / 624;
# (16384, 1000) 58 / 73 / 114 -> 60 / 76 / 96; (1024, 1000) 5.9 / 8.8 / 26.7 -> 5.9 /
# 9.1 / 26.9. Against the code before both (separate processes): (100000, 64) at 5
# 3910-4248 ms (its first step left 46% of the rows, the next seventeen 45% down to
# 12%), at 10 2016-2197; (16384, 1000) at 2.5 / 5 / 10 141 / 148 / 245; the entmax
# package's bisection (float32, 50 steps) took 585-1049 ms on (100000, 64), 2347-3397 on
# (16384, 1000), 141-163 on (100000, 10). Extra peak memory of a forward + backward:
# (100000, 64) at 5 666 -> 801 MB, (1000000, 10) 1163 -> 1227, (65536, 1000) unchanged
# (2.8 GB). Not below 2, where an evaluation costs 0.7 ms per million float32 values:
# float32 (65536, 1000) at 1.5, forward + backward, 228 -> 262 ms with it (then without
# the half), and 66 MB more at its peak.
DONE_ELEMENTS = 1 << 18
ROW_ELEMENTS = 16

# The eager Newton loop at a Python-float alpha in (1, 2) whose state moves in place
# (core.discrete._clamped_form "base" and "offset"), on rows of at least
# NARROW_MIN_LENGTH entries and calls of at least COMPACT_ELEMENTS values, goes on after
# its first step over the entries that can still be in the support, packed into rows
# as wide as the most any row keeps (core.discrete._narrowed), unless that is more
# than NARROW_SHARE of the row. Finding and packing them (a flatnonzero, a take and a
# scatter) and putting p and s back cost about 2 ms on float32 (1024, 1000) at alpha =
# 1.3 on N(0, 1) rows, where 253 of 1000 columns were kept: there it lost (forward +
# backward, torch 2.13, AMD EPYC, one process alternating, without / with: 6.1 / 6.7-7.1
# ms); where fewer are kept it won: N(0, 1) rows at 1.7 (kept 19) 6.6 / 5.2, N(0, 3^2)
# at 1.3 (86) 5.8 / 4.9 and 1.9 5.9 / 5.0, N(0, 0.3^2) at 1.7 (73) 6.8 / 6.2 and 1.9
# 6.6 / 5.5; N(0, 3^2) at 1.2 (kept 118, three evaluations in all) 7.4-7.6 / 7.5-7.7.
NARROW_MIN_LENGTH = 128
NARROW_SHARE = 0.1

# Above alpha = 2 the eager loop first keeps the entries within 1/(alpha - 1) of each row's
# maximum (core.discrete._above_two_packed) where no row keeps more than this share of
# its entries: the loop takes 13 to 64 evaluations there, each of them over the kept
# entries alone, against about two evaluations' worth for the packing. Float32 (1024,
# 1000), forward + backward (torch 2.13, AMD EPYC, one process alternating), ms, at
# shares 0 (never) / 0.1 / 0.5 / 0.9: N(0, 0.3^2) rows at 2.5 (at most 41% kept) 97 / 94
# / 52 / 52; N(0, 0.05^2) at 10 (40%) 333 / 338 / 153 / 147; N(0, 0.1^2) at 5 (52%) 269
# / 262 / 267 / 148.
ABOVE_TWO_SHARE = 0.9

# ... and before that, the loop solves each row's ABOVE_TWO_LARGEST[0] largest entries
# alone (core.discrete._above_two_rows): rows whose smallest kept entry gets p = 0 are
# done, the others take the next width, then the packing above. Torch's topk of 8 took
# 1.4 ms on a float64 (1024, 1000) array, of 16 to 64 4.5-5.6 (NumPy's argpartition 9),
# an evaluation of the whole rows 3.7. Float32 (1024, 1000), forward + backward, two
# alternations of processes, before (packing alone) / after, ms: N(0, 0.01^2) rows at
# 2.5 (supports of 34: the 64) 91-100 / 25-27, at 5 267-328 / 18-19, at 10 577-685 /
# 29-31; N(0, 0.1^2) 73-82 / 24-28, 123-149 / 16-17, 63-67 / 29-30; N(0, 1) at 2.5 to 10
# level (11.5-12.4 / 10.2-11.9 at 2.5, 29-33 / 29-31 at 10). (8,) alone took 83 and 91
# ms at 2.5 on N(0, 0.03^2) and N(0, 0.01^2) rows (supports of 18 and 34: packed).
ABOVE_TWO_LARGEST = (8, 64)

# An alpha array (one per row) holding at most ALPHA_GROUPS distinct values (one per
# attention head, say) is solved as that many Python-float alphas on their rows
# (core.discrete._alpha_groups), whose loops have the float paths' starts, Halley steps
# and state forms: the array's own loop evaluates the generated power series at every
# step. Float32 (1024, 1000) N(0, 1) rows, forward + backward, one process alternating,
# array loop / grouped, ms: CPU (torch 2.13, 2-core Xeon) one value 1.5 193 / 5.0, 1.3
# with the alpha-gradient 135 / 16, 8 heads 1.1-1.9 160 / 18 (with the alpha-gradient
# 212 / 36), 16 heads 1.05-1.95 170 / 27, 4 heads 1.2-3 731 / 26. Off the CPU each
# group is a call of its own, host-bound: on an H200 (torch 2.11) heads in 1.1-1.9, 1
# 6.2 / 3.8, 2 9.4 / 5.0, 4 7.0 / 7.2, 8 7.7 / 12.8, 16 9.9 / 28.7; 4 heads 1.2-3
# 17.1 / 12.4. Hence ALPHA_GROUPS_OFF_CPU.
ALPHA_GROUPS = 16
ALPHA_GROUPS_OFF_CPU = 4

# Hot eager calls of entmax at the alphas whose powers are roots (tsallis.core.rooted:
# 1.25, 9/7, 14/11, 1.3, 4/3, 1.375, 1.4, 10/7) or whole (3/2, and 2: sparsemax, whose
# support search takes FUSED_SUPPORT_STEPS steps on either device), on the CPU or a CUDA
# device, float32 or computed in float32, on rows of at least FUSED_MIN_LENGTH entries
# and calls of at least FUSED_MIN_ELEMENTS values: once the same (alpha, row length,
# forward alone or not, device type) has come FUSED_AFTER_CALLS times in a process, the
# Torch face compiles rooted.entmax_rows (torch.compile: Inductor's C++ on the CPU,
# Triton on a GPU; static row length, any number of rows) and runs it from then on, at
# most FUSED_KERNELS kernels a process; None: never. Its FUSED_STEPS Halley steps from
# Jensen's bound settle float32 N(0, sigma^2) rows of 1000 at every such alpha for sigma
# from 1e-6 to 100, except up to 7 of 256 at sigma = 3, which the eager loop finishes
# (torch_bridge._fused); at 3/2, 3 of (1024, 1000) N(0, 1) rows are left after 3 steps
# and none after 4. On a GPU a step is arithmetic inside the kernel's pass over each
# row, where each row the eager loop finishes costs its launches and host reads: there
# the kernel takes FUSED_STEPS_OFF_CPU steps. The compile takes seconds (measured, AMD
# EPYC, 2 threads: 24 s in a fresh environment, 2 s once Inductor's cache on disk holds
# the kernel), hence the wait for a hot call: a call or two in a session never
# compiles. A compile that fails (no C++ compiler) warns once and leaves the eager loop.
FUSED_AFTER_CALLS: int | None = 10
FUSED_STEPS = 3
FUSED_STEPS_OFF_CPU = 4
FUSED_SUPPORT_STEPS = 4
FUSED_KERNELS = 8
FUSED_MIN_LENGTH = 512
FUSED_MIN_ELEMENTS = 1 << 18
