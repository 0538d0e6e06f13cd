"""Network helpers (spec/legacy-protocol.md §2.1 ``osmosis_ai.rollout.network``).

The pure helpers are implemented. Public-IP detection is not: upstream queried cloud metadata endpoints and
external IP services, and osmosis-compat never contacts either — ``detect_public_ip`` and the detectors raise
:class:`PublicIPDetectionError` saying so. Pass the host to report explicitly.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Optional

from .exceptions import PublicIPDetectionError

__all__ = [
    "PublicIPDetectionError",
    "detect_from_cloud_metadata",
    "detect_from_external_services",
    "detect_public_ip",
    "is_private_ip",
    "is_valid_hostname_or_ip",
    "validate_ipv4",
]

_NO_DETECTION = (
    "{what}: public IP detection is not part of osmosis-compat, which never contacts cloud metadata services "
    "(169.254.169.254) or external IP services. Pass the host to report explicitly (e.g. --host <your-ip>)."
)

_HOSTNAME_LABEL = re.compile(r"^(?!-)[A-Za-z0-9-]{1,63}(?<!-)$")


def validate_ipv4(ip: str) -> bool:
    """Whether ``ip`` is a dotted-quad IPv4 address."""
    if not isinstance(ip, str):
        return False
    try:
        ipaddress.IPv4Address(ip)
    except ValueError:
        return False
    return True


def is_private_ip(ip: str) -> bool:
    """Whether ``ip`` is private, loopback, link-local or otherwise not publicly routable. Invalid → ``False``."""
    try:
        address = ipaddress.ip_address(ip)
    except ValueError:
        return False
    return address.is_private or address.is_loopback or address.is_link_local or address.is_reserved


def is_valid_hostname_or_ip(value: str) -> bool:
    """Whether ``value`` is an IP address (v4/v6) or an RFC 1123 hostname (≤ 253 chars, labels ≤ 63)."""
    if not isinstance(value, str) or not value or value != value.strip():
        return False
    try:
        ipaddress.ip_address(value)
        return True
    except ValueError:
        pass
    hostname = value[:-1] if value.endswith(".") else value
    if not hostname or len(hostname) > 253:
        return False
    labels = hostname.split(".")
    if all(label.isdigit() for label in labels):
        return False  # looks like a malformed IPv4 address, not a hostname
    return all(_HOSTNAME_LABEL.match(label) for label in labels)


def detect_from_cloud_metadata(timeout: float = 2.0) -> Optional[str]:
    """Not supported: raises :class:`PublicIPDetectionError` (no cloud metadata calls)."""
    raise PublicIPDetectionError(_NO_DETECTION.format(what="detect_from_cloud_metadata"))


def detect_from_external_services(timeout: float = 10.0) -> Optional[str]:
    """Not supported: raises :class:`PublicIPDetectionError` (no external IP services)."""
    raise PublicIPDetectionError(_NO_DETECTION.format(what="detect_from_external_services"))


def detect_public_ip(*args: object, **kwargs: object) -> str:
    """Not supported: raises :class:`PublicIPDetectionError` explaining why and what to do instead."""
    raise PublicIPDetectionError(_NO_DETECTION.format(what="detect_public_ip"))
