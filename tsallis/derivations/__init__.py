"""SymPy derivations: the single source of every closed form in the toolkit.

Each family module derives its normalizer and moments from the density's
definition; ``derivations.registry`` lists what ``tsallis derive`` renders.
Imported only by the CLI and the tests (it imports SymPy). An internal layer, not a
stable API: ``tsallis derive`` is its interface.
"""
