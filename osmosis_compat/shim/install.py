"""Put the full ``osmosis_ai`` finder on ``sys.meta_path`` now: ``import osmosis_compat.shim.install``.

``osmosis_compat_shim.pth`` does not import this module: it installs an import-free placeholder that loads the
finder on the first ``osmosis_ai`` import (see :mod:`.finder`). This module is for environments without the
``.pth`` (``python -S``, embedded interpreters, a ``sitecustomize``) that want the shim. It never fails loudly —
a broken shim must not break unrelated programs.
"""

try:
    from osmosis_compat.shim.finder import install as _install

    _install()
except Exception:  # pragma: no cover - never break interpreter start-up
    pass
