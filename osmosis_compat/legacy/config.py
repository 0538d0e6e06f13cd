"""Settings of the legacy API and their environment variables (spec/legacy-protocol.md §2.14).

Each settings class reads its own env prefix (``OSMOSIS_ROLLOUT_CLIENT_``, ``OSMOSIS_ROLLOUT_SERVER_``,
``OSMOSIS_ROLLOUT_``), case-insensitively, then a ``.env`` file in the current directory; explicit constructor
arguments win over both. Out-of-bounds or malformed values raise pydantic's ``ValidationError`` when the object
is built. Implemented on plain pydantic (pydantic-settings is not a dependency).
"""

from __future__ import annotations

import os
import threading
from typing import Any, ClassVar, Optional

from pydantic import BaseModel, Field, model_validator

__all__ = [
    "RolloutClientSettings",
    "RolloutServerSettings",
    "RolloutSettings",
    "configure",
    "get_settings",
    "reset_settings",
]

ENV_FILE = ".env"


def _parse_env_file(path: str) -> dict[str, str]:
    """``KEY=VALUE`` lines of a dotenv file (comments, blank lines, ``export`` and quotes handled)."""
    values: dict[str, str] = {}
    try:
        with open(path, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return values
    for raw in lines:
        line = raw.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        if line.startswith("export "):
            line = line[len("export ") :].lstrip()
        key, _, value = line.partition("=")
        key, value = key.strip(), value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        elif " #" in value:
            value = value.split(" #", 1)[0].rstrip()
        values[key] = value
    return values


def _env_values(prefix: str, fields: list[str]) -> dict[str, str]:
    """Values for ``fields`` from ``.env`` in the CWD, overridden by the process environment."""
    wanted = {f"{prefix}{name}".upper(): name for name in fields}
    found: dict[str, str] = {}
    for source in (_parse_env_file(os.path.join(os.getcwd(), ENV_FILE)), os.environ):
        for key, value in source.items():
            name = wanted.get(key.upper())
            if name is not None:
                found[name] = value
    return found


class _EnvSettings(BaseModel):
    """A model whose unset fields are filled from ``<env_prefix><FIELD>`` variables."""

    env_prefix: ClassVar[str] = ""

    @model_validator(mode="before")
    @classmethod
    def _fill_from_environment(cls, data: Any) -> Any:
        if data is None:
            data = {}
        if not isinstance(data, dict):
            return data
        scalar_fields = [
            name
            for name, info in cls.model_fields.items()
            if not (isinstance(info.annotation, type) and issubclass(info.annotation, BaseModel))
        ]
        from_env = _env_values(cls.env_prefix, scalar_fields)
        return {**from_env, **data}


class RolloutClientSettings(_EnvSettings):
    """Settings of the client that calls the controller (env prefix ``OSMOSIS_ROLLOUT_CLIENT_``)."""

    env_prefix: ClassVar[str] = "OSMOSIS_ROLLOUT_CLIENT_"

    timeout_seconds: float = Field(default=300.0, ge=1.0, le=3600.0)
    max_retries: int = Field(default=3, ge=0, le=10)
    complete_rollout_retries: int = Field(default=2, ge=0, le=10)
    retry_base_delay: float = Field(default=1.0, ge=0.1, le=60.0)
    retry_max_delay: float = Field(default=30.0, ge=1.0, le=300.0)
    max_connections: int = Field(default=100, ge=1, le=1000)
    max_keepalive_connections: int = Field(default=20, ge=1, le=100)


class RolloutServerSettings(_EnvSettings):
    """Settings of the rollout server (env prefix ``OSMOSIS_ROLLOUT_SERVER_``).

    ``request_timeout_seconds`` and the ``registration_*`` settings are accepted for compatibility; osmosis-compat
    does not register with the platform.
    """

    env_prefix: ClassVar[str] = "OSMOSIS_ROLLOUT_SERVER_"

    max_concurrent_rollouts: int = Field(default=100, ge=1, le=10000)
    record_ttl_seconds: float = Field(default=3600.0, ge=60.0, le=86400.0)
    cleanup_interval_seconds: float = Field(default=60.0, ge=10.0, le=3600.0)
    request_timeout_seconds: float = Field(default=600.0, ge=10.0, le=3600.0)
    registration_readiness_timeout_seconds: float = Field(default=10.0, ge=1.0, le=60.0)
    registration_readiness_poll_interval_seconds: float = Field(default=0.2, ge=0.05, le=5.0)
    registration_shutdown_timeout_seconds: float = Field(default=30.0, ge=1.0, le=300.0)


class RolloutSettings(_EnvSettings):
    """All settings (env prefix ``OSMOSIS_ROLLOUT_``). ``max_metadata_size_bytes`` is not wired to the
    ``RolloutRequest`` limit (as upstream; use ``set_max_metadata_size_bytes``)."""

    env_prefix: ClassVar[str] = "OSMOSIS_ROLLOUT_"

    client: RolloutClientSettings = Field(default_factory=RolloutClientSettings)
    server: RolloutServerSettings = Field(default_factory=RolloutServerSettings)
    max_metadata_size_bytes: int = Field(default=1024 * 1024, ge=1024, le=100 * 1024 * 1024)


_settings_lock = threading.Lock()
_settings: Optional[RolloutSettings] = None


def get_settings() -> RolloutSettings:
    """The process-wide settings, built from the environment on first use."""
    global _settings
    with _settings_lock:
        if _settings is None:
            _settings = RolloutSettings()
        return _settings


def configure(settings: RolloutSettings) -> None:
    """Replace the process-wide settings."""
    global _settings
    with _settings_lock:
        _settings = settings


def reset_settings() -> None:
    """Forget the process-wide settings; the next ``get_settings()`` reads the environment again."""
    global _settings
    with _settings_lock:
        _settings = None
