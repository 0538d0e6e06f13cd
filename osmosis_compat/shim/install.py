"""Run at interpreter start by ``osmosis_compat_shim.pth``: put the ``osmosis_ai`` finder on ``sys.meta_path``.

Must stay tiny: it runs in every Python process of the environment. It imports only the finder module (stdlib
only) and never fails loudly — a broken shim must not break unrelated programs.
"""

try:
    from osmosis_compat.shim.finder import install as _install

    _install()
except Exception:  # pragma: no cover - never break interpreter start-up
    pass
