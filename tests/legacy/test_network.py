"""Network helpers; public-IP detection is refused with the reason (spec §2.1 network module)."""

import pytest

from osmosis_compat.legacy import network
from osmosis_compat.legacy.exceptions import PublicIPDetectionError


@pytest.mark.parametrize("ip, ok", [("1.2.3.4", True), ("255.255.255.255", True), ("256.1.1.1", False),
                                    ("1.2.3", False), ("::1", False), ("", False), (None, False), (" 1.2.3.4", False)])
def test_validate_ipv4(ip, ok):
    assert network.validate_ipv4(ip) is ok


@pytest.mark.parametrize("ip, private", [("10.0.0.1", True), ("192.168.1.1", True), ("172.16.0.1", True),
                                         ("127.0.0.1", True), ("169.254.169.254", True), ("8.8.8.8", False),
                                         ("::1", True), ("not-an-ip", False)])
def test_is_private_ip(ip, private):
    assert network.is_private_ip(ip) is private


@pytest.mark.parametrize("value, ok", [("example.com", True), ("localhost", True), ("my-host.internal.", True),
                                       ("10.0.0.1", True), ("::1", True), ("-bad.com", False), ("a..b", False),
                                       ("", False), ("a" * 64 + ".com", False), ("1.2.3", False),
                                       ("has space", False), (" example.com", False)])
def test_is_valid_hostname_or_ip(value, ok):
    assert network.is_valid_hostname_or_ip(value) is ok


@pytest.mark.parametrize("fn", [network.detect_public_ip, network.detect_from_cloud_metadata,
                                network.detect_from_external_services])
def test_public_ip_detection_is_refused_with_reason(fn):
    with pytest.raises(PublicIPDetectionError) as info:
        fn()
    message = str(info.value)
    assert "never contacts" in message and "host" in message
