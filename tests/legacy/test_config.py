"""Settings, env vars, bounds, .env file and the singleton helpers (spec §2.14)."""

import pytest
from pydantic import ValidationError

from osmosis_compat.legacy import config
from osmosis_compat.legacy.config import (
    RolloutClientSettings,
    RolloutServerSettings,
    RolloutSettings,
    configure,
    get_settings,
    reset_settings,
)

ENV_PREFIXES = ("OSMOSIS_ROLLOUT_",)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch, tmp_path):
    import os

    for key in list(os.environ):
        if key.upper().startswith(ENV_PREFIXES):
            monkeypatch.delenv(key)
    monkeypatch.chdir(tmp_path)
    reset_settings()
    yield
    reset_settings()


def test_defaults():
    s = RolloutSettings()
    assert s.client.model_dump() == {
        "timeout_seconds": 300.0, "max_retries": 3, "complete_rollout_retries": 2, "retry_base_delay": 1.0,
        "retry_max_delay": 30.0, "max_connections": 100, "max_keepalive_connections": 20,
    }
    assert s.server.model_dump() == {
        "max_concurrent_rollouts": 100, "record_ttl_seconds": 3600.0, "cleanup_interval_seconds": 60.0,
        "request_timeout_seconds": 600.0, "registration_readiness_timeout_seconds": 10.0,
        "registration_readiness_poll_interval_seconds": 0.2, "registration_shutdown_timeout_seconds": 30.0,
    }
    assert s.max_metadata_size_bytes == 1048576


ENV_CASES = [
    ("OSMOSIS_ROLLOUT_CLIENT_TIMEOUT_SECONDS", "client", "timeout_seconds", "12.5", 12.5),
    ("OSMOSIS_ROLLOUT_CLIENT_MAX_RETRIES", "client", "max_retries", "0", 0),
    ("OSMOSIS_ROLLOUT_CLIENT_COMPLETE_ROLLOUT_RETRIES", "client", "complete_rollout_retries", "5", 5),
    ("OSMOSIS_ROLLOUT_CLIENT_RETRY_BASE_DELAY", "client", "retry_base_delay", "0.1", 0.1),
    ("OSMOSIS_ROLLOUT_CLIENT_RETRY_MAX_DELAY", "client", "retry_max_delay", "2", 2.0),
    ("OSMOSIS_ROLLOUT_CLIENT_MAX_CONNECTIONS", "client", "max_connections", "7", 7),
    ("OSMOSIS_ROLLOUT_CLIENT_MAX_KEEPALIVE_CONNECTIONS", "client", "max_keepalive_connections", "3", 3),
    ("OSMOSIS_ROLLOUT_SERVER_MAX_CONCURRENT_ROLLOUTS", "server", "max_concurrent_rollouts", "8", 8),
    ("OSMOSIS_ROLLOUT_SERVER_RECORD_TTL_SECONDS", "server", "record_ttl_seconds", "60", 60.0),
    ("OSMOSIS_ROLLOUT_SERVER_CLEANUP_INTERVAL_SECONDS", "server", "cleanup_interval_seconds", "10", 10.0),
    ("OSMOSIS_ROLLOUT_SERVER_REQUEST_TIMEOUT_SECONDS", "server", "request_timeout_seconds", "3600", 3600.0),
    ("OSMOSIS_ROLLOUT_SERVER_REGISTRATION_READINESS_TIMEOUT_SECONDS", "server",
     "registration_readiness_timeout_seconds", "1", 1.0),
    ("OSMOSIS_ROLLOUT_SERVER_REGISTRATION_READINESS_POLL_INTERVAL_SECONDS", "server",
     "registration_readiness_poll_interval_seconds", "0.05", 0.05),
    ("OSMOSIS_ROLLOUT_SERVER_REGISTRATION_SHUTDOWN_TIMEOUT_SECONDS", "server",
     "registration_shutdown_timeout_seconds", "300", 300.0),
    ("OSMOSIS_ROLLOUT_MAX_METADATA_SIZE_BYTES", None, "max_metadata_size_bytes", "1024", 1024),
]


@pytest.mark.parametrize("env, section, field, raw, expected", ENV_CASES)
def test_env_vars(monkeypatch, env, section, field, raw, expected):
    monkeypatch.setenv(env, raw)
    settings = get_settings()
    target = getattr(settings, section) if section else settings
    assert getattr(target, field) == expected


BOUNDS = [
    ("OSMOSIS_ROLLOUT_CLIENT_TIMEOUT_SECONDS", "0.5"), ("OSMOSIS_ROLLOUT_CLIENT_TIMEOUT_SECONDS", "3601"),
    ("OSMOSIS_ROLLOUT_CLIENT_MAX_RETRIES", "11"), ("OSMOSIS_ROLLOUT_CLIENT_MAX_RETRIES", "-1"),
    ("OSMOSIS_ROLLOUT_CLIENT_COMPLETE_ROLLOUT_RETRIES", "11"), ("OSMOSIS_ROLLOUT_CLIENT_RETRY_BASE_DELAY", "0.05"),
    ("OSMOSIS_ROLLOUT_CLIENT_RETRY_BASE_DELAY", "61"), ("OSMOSIS_ROLLOUT_CLIENT_RETRY_MAX_DELAY", "0.5"),
    ("OSMOSIS_ROLLOUT_CLIENT_RETRY_MAX_DELAY", "301"), ("OSMOSIS_ROLLOUT_CLIENT_MAX_CONNECTIONS", "0"),
    ("OSMOSIS_ROLLOUT_CLIENT_MAX_CONNECTIONS", "1001"), ("OSMOSIS_ROLLOUT_CLIENT_MAX_KEEPALIVE_CONNECTIONS", "101"),
    ("OSMOSIS_ROLLOUT_SERVER_MAX_CONCURRENT_ROLLOUTS", "0"),
    ("OSMOSIS_ROLLOUT_SERVER_MAX_CONCURRENT_ROLLOUTS", "10001"),
    ("OSMOSIS_ROLLOUT_SERVER_RECORD_TTL_SECONDS", "59"), ("OSMOSIS_ROLLOUT_SERVER_RECORD_TTL_SECONDS", "86401"),
    ("OSMOSIS_ROLLOUT_SERVER_CLEANUP_INTERVAL_SECONDS", "9"),
    ("OSMOSIS_ROLLOUT_SERVER_CLEANUP_INTERVAL_SECONDS", "3601"),
    ("OSMOSIS_ROLLOUT_SERVER_REQUEST_TIMEOUT_SECONDS", "9"),
    ("OSMOSIS_ROLLOUT_SERVER_REGISTRATION_READINESS_TIMEOUT_SECONDS", "61"),
    ("OSMOSIS_ROLLOUT_SERVER_REGISTRATION_READINESS_POLL_INTERVAL_SECONDS", "0.01"),
    ("OSMOSIS_ROLLOUT_SERVER_REGISTRATION_SHUTDOWN_TIMEOUT_SECONDS", "0"),
    ("OSMOSIS_ROLLOUT_MAX_METADATA_SIZE_BYTES", "1023"),
    ("OSMOSIS_ROLLOUT_MAX_METADATA_SIZE_BYTES", str(100 * 1024 * 1024 + 1)),
    ("OSMOSIS_ROLLOUT_CLIENT_MAX_RETRIES", "three"),
]


@pytest.mark.parametrize("env, raw", BOUNDS)
def test_out_of_bounds_env_raises_when_built(monkeypatch, env, raw):
    monkeypatch.setenv(env, raw)
    with pytest.raises(ValidationError):
        get_settings()


def test_constructor_arguments_win_and_are_bounded(monkeypatch):
    monkeypatch.setenv("OSMOSIS_ROLLOUT_CLIENT_MAX_RETRIES", "7")
    assert RolloutClientSettings(max_retries=1).max_retries == 1
    assert RolloutClientSettings().max_retries == 7
    with pytest.raises(ValidationError):
        RolloutServerSettings(max_concurrent_rollouts=0)


def test_env_names_case_insensitive_and_unknown_ignored(monkeypatch):
    monkeypatch.setenv("osmosis_rollout_client_max_retries", "4")
    monkeypatch.setenv("OSMOSIS_ROLLOUT_CLIENT_SOMETHING_ELSE", "x")
    assert RolloutClientSettings().max_retries == 4


def test_dotenv_file_in_cwd(tmp_path, monkeypatch):
    (tmp_path / ".env").write_text(
        "# comment\n"
        "export OSMOSIS_ROLLOUT_CLIENT_MAX_RETRIES=6\n"
        "OSMOSIS_ROLLOUT_SERVER_MAX_CONCURRENT_ROLLOUTS='9'\n"
        'OSMOSIS_ROLLOUT_CLIENT_TIMEOUT_SECONDS="42" \n'
        "OSMOSIS_ROLLOUT_CLIENT_MAX_CONNECTIONS=50 # inline comment\n"
        "garbage line\n"
    )
    settings = RolloutSettings()
    assert settings.client.max_retries == 6
    assert settings.server.max_concurrent_rollouts == 9
    assert settings.client.timeout_seconds == 42.0
    assert settings.client.max_connections == 50
    monkeypatch.setenv("OSMOSIS_ROLLOUT_CLIENT_MAX_RETRIES", "2")  # process env beats .env
    assert RolloutClientSettings().max_retries == 2


def test_singleton_configure_reset(monkeypatch):
    first = get_settings()
    assert get_settings() is first
    custom = RolloutSettings(client=RolloutClientSettings(max_retries=0))
    configure(custom)
    assert get_settings() is custom
    reset_settings()
    assert config._settings is None
    monkeypatch.setenv("OSMOSIS_ROLLOUT_CLIENT_MAX_RETRIES", "9")
    assert get_settings().client.max_retries == 9


def test_app_state_takes_server_settings_as_upstream() -> None:
    """Upstream's AppState(settings=RolloutServerSettings(...)) (issue 12: was AttributeError 'server')."""
    from osmosis_compat.legacy.config import RolloutServerSettings, RolloutSettings
    from osmosis_compat.legacy.state import AppState

    server = RolloutServerSettings(max_concurrent_rollouts=7, record_ttl_seconds=120.0, cleanup_interval_seconds=30.0)
    state = AppState(settings=server)
    assert state.settings is server
    assert (state._max_concurrent, state.record_ttl, state._cleanup_interval) == (7, 120.0, 30.0)
    assert AppState(max_concurrent=3, settings=server)._max_concurrent == 3
    assert AppState(max_concurrent=0, settings=server)._max_concurrent == 7  # 0 means "not given", as upstream
    whole = AppState(settings=RolloutSettings(server=server))  # what create_app hands over
    assert whole.settings is server and whole._max_concurrent == 7
    assert AppState().settings.max_concurrent_rollouts == 100
    with pytest.raises(TypeError, match="RolloutServerSettings"):
        AppState(settings={"max_concurrent_rollouts": 2})  # type: ignore[arg-type]
