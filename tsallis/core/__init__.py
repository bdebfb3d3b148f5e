"""The shared numerical core: what the NumPy face (tsallis) and the Torch face
(torch_bridge) both run.

- ``arrays``: the array-namespace layer (array-api-compat) and the special
  functions the array API lacks, for NumPy arrays and Torch tensors alike.
- ``window``: 1D window moments and 2D radial moments of continuous attention,
  written once against that namespace (both faces run it).
- ``discrete``: softmax, sparsemax, entmax (sort-based and bisection), the gppr
  Jacobian and the ev-softmax logits, likewise written once.
- ``kernel``: the kernel families' panels, support boundaries and log-space node
  sums (tsallis.kernels.KernelFamily and torch_bridge.kernel_attention), likewise.
- ``bases``: the base laws Q on [a, b] of the kernel families.
- ``branching``: how the core skips work no element needs (a host read, or
  torch.cond supplied by the Torch face under torch.compile).
- ``_generated``: closed forms printed once for the array namespace.
- ``tuning``: the regime thresholds and node counts shared by both backends.
- ``rules``: Gauss-Legendre and Gauss-Jacobi tables (any exponent).
- ``special``: the special-function table of the generated NumPy code.
- ``validation``: argument checks with ValueError/TypeError naming the argument.

The core imports neither face nor the tools (CLI, verify, figures); the
contracts in pyproject.toml ([tool.importlinter]) enforce it. It is an internal
layer, not a stable API: import the faces instead.
"""
