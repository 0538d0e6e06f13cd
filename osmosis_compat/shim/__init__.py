"""The ``osmosis_ai.*`` import names, mapped onto osmosis-compat.

A ``.pth`` file installed with the distribution runs :mod:`.install` at interpreter start; it puts
:class:`~.finder.OsmosisAIFinder` on ``sys.meta_path``. The finder serves every module name listed in
:mod:`.names` — e.g. ``osmosis_ai.rollout.core.schemas`` is ``osmosis_compat.legacy.schemas`` — so legacy and
workflow agent files run with their imports unchanged. See ``docs/import-shim.md`` for the rules (including
what happens when the real osmosis-ai is installed too).
"""
