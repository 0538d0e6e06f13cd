"""The legacy package: lazy exports cover the upstream export lists; the core modules import nothing heavy."""

import subprocess
import sys

import pytest

import osmosis_compat.legacy as legacy
from osmosis_compat.shim.names import LEGACY_ROLLOUT_NAMES, OSMOSIS_AI_NAMES


@pytest.mark.parametrize("name", sorted(set(LEGACY_ROLLOUT_NAMES) | (set(OSMOSIS_AI_NAMES) - {"__version__"})))
def test_every_upstream_name_resolves(name):
    assert name in legacy.__all__
    assert getattr(legacy, name) is not None


def test_unknown_name_is_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        legacy.Nope  # noqa: B018


def test_validation_error_is_the_validator_dataclass():
    from osmosis_compat.legacy.validator import ValidationError

    assert legacy.ValidationError is ValidationError


def test_core_modules_import_nothing_heavy():
    code = (
        "import sys, osmosis_compat.legacy, osmosis_compat.legacy.base, osmosis_compat.legacy.schemas, "
        "osmosis_compat.legacy.config, osmosis_compat.legacy.validator, osmosis_compat.legacy.tools, "
        "osmosis_compat.legacy.utils, osmosis_compat.legacy.registry, osmosis_compat.legacy.rewards, "
        "osmosis_compat.legacy.testing, osmosis_compat.legacy.network, osmosis_compat.legacy.api_key; "
        "print(sorted(m for m in ('fastapi', 'httpx', 'litellm', 'starlette', 'uvicorn') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
