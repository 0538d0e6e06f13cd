"""RolloutServer API keys (spec §1.6)."""

from osmosis_compat.legacy.api_key import API_KEY_PREFIX, API_KEY_RANDOM_BYTES, generate_api_key, validate_api_key


def test_generate_api_key():
    key = generate_api_key()
    assert API_KEY_PREFIX == "osm_rollout_" and API_KEY_RANDOM_BYTES == 32
    assert key.startswith("osm_rollout_") and len(key) == 55
    assert generate_api_key() != key


def test_validate_api_key():
    assert validate_api_key("abc", "abc") is True
    assert validate_api_key("ABC", "abc") is False
    assert validate_api_key(None, "abc") is False
    assert validate_api_key("", "") is True
    assert validate_api_key("", "abc") is False
    assert validate_api_key("ключ", "ключ") is True
