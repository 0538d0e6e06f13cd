"""The admission checks of runtime/wirecheck.py as pure functions (the HTTP-level behaviour is in
tests/server/test_hardening_*.py)."""

from __future__ import annotations

import pytest

from osmosis_compat.runtime.wirecheck import (
    CONTROLLER_HOSTS_ENV,
    HostAllowList,
    check_wire_json,
    resolve_controller_hosts,
)


@pytest.mark.parametrize(("spec", "url", "allowed"), [
    ("trainer.internal", "http://trainer.internal:8000/v1", True),
    ("trainer.internal", "https://TRAINER.internal/v1", True),
    ("trainer.internal", "http://trainer.internal.evil.example/v1", False),
    ("trainer.internal", "http://user@evil.example/trainer.internal", False),
    ("trainer.internal:8000", "http://trainer.internal:8000/v1", True),
    ("trainer.internal:8000", "http://trainer.internal:8001/v1", False),
    ("trainer.internal:80", "http://trainer.internal/v1", True),  # default ports count
    ("trainer.internal:443", "https://trainer.internal/v1", True),
    ("*.corp.example", "http://a.b.corp.example/v1", True),
    ("*.corp.example", "http://corp.example/v1", False),
    ("*.corp.example", "http://evilcorp.example/v1", False),
    ("10.0.0.0/8", "http://10.200.0.7:9000", True),
    ("10.0.0.0/8", "http://11.0.0.1", False),
    ("10.0.0.0/8", "http://ten.example", False),
    ("::1", "http://[::1]:9000/v1", True),
    ("[::1]:9000", "http://[::1]:9000/v1", True),
    ("[::1]:9000", "http://[::1]:9001/v1", False),
    ("fd00::/8", "http://[fd12::1]/v1", True),
    ("a, b ,c", "http://b/v1", True),
])
def test_allow_list_matching(spec, url, allowed):
    assert HostAllowList.parse(spec).allows(url) is allowed


@pytest.mark.parametrize("spec", ["a b", "*", "a*.example", "*.", "host:port", "host:0", "host:70000", "10.0.0.0/33",
                                  "[::1", "[::1]x", "a/b"])
def test_malformed_entries_are_refused(spec):
    with pytest.raises(ValueError, match="controller host"):
        HostAllowList.parse(spec)


def test_resolution_order_explicit_then_environment_then_none():
    assert resolve_controller_hosts(None, environ={}) is None
    assert resolve_controller_hosts(None, environ={CONTROLLER_HOSTS_ENV: " , "}) is None
    assert resolve_controller_hosts(None, environ={CONTROLLER_HOSTS_ENV: "a"}).entries == ("a",)
    assert resolve_controller_hosts("b", environ={CONTROLLER_HOSTS_ENV: "a"}).entries == ("b",)
    assert resolve_controller_hosts("", environ={CONTROLLER_HOSTS_ENV: "a"}) is None  # explicit: any host
    assert resolve_controller_hosts(["b", "c:81"], environ={}).entries == ("b", "c:81")


def test_check_names_the_field_the_host_and_the_allowed_hosts():
    with pytest.raises(ValueError) as info:
        HostAllowList.parse("a.example").check("http://u:p@b.example:81/x", label="server_url")
    message = str(info.value)
    assert "server_url names host 'b.example:81'" in message and "a.example" in message
    assert "u:p" not in message


def test_wire_json_check():
    assert check_wire_json({"a": [1.5, "x"]}, label="m") == {"a": [1.5, "x"]}
    with pytest.raises(ValueError, match=r"m\.a\[1\] is nan"):
        check_wire_json({"a": [1, float("nan")]}, label="m")
    with pytest.raises(ValueError, match="a key of m holds a lone surrogate"):
        check_wire_json({"\ud800": 1}, label="m")
    assert check_wire_json({"score": float("inf")}, label="m", numbers=False)  # free-form fields keep NaN/inf
