"""Which IP addresses a webhook may be delivered to.

A schedule's owner chooses the webhook URL, and the worker calls it from
inside the deployment's network. Without a rule, a URL could point duetime at
the instance metadata service, a database in the VPC, or the local stack's own
API. So every address a host name resolves to is checked, after resolution,
and the connection goes to the address that was checked (a second lookup
could answer differently: DNS rebinding).

The rule, in order:
1. an address inside ``allowed_networks`` is allowed, whatever it is;
2. cloud metadata endpoints (169.254.169.254, fd00:ec2::254 and friends) are
   refused;
3. unspecified, multicast, link-local (169.254.0.0/16, fe80::/10) and
   reserved addresses are refused;
4. loopback, private (RFC 1918, fc00::/7), shared (100.64.0.0/10) and every
   other non-global address are refused unless ``allow_private`` is on;
5. any other address is allowed.

IPv6 addresses that carry an IPv4 address (``::ffff:a.b.c.d``, 6to4, Teredo,
NAT64 ``64:ff9b::/96``) are judged by the IPv4 address inside as well.

The same rule refuses a URL when it is saved (``url_refusal``), where its
host is an address written out: dotted, IPv6, and every numeric form the
system resolver reads as an address without a lookup (``2130706433``,
``0x7f.1``, ``0177.0.0.1``, ``127.1``). A name is judged at each delivery
only, since what it resolves to can change.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final
from urllib.parse import urlsplit

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

# Instance, task and pod credential endpoints, and the VPC resolver: never a
# webhook, even when private addresses are allowed.
METADATA_ADDRESSES: Final[frozenset[IPAddress]] = frozenset(
    ipaddress.ip_address(a)
    for a in (
        "169.254.169.254",  # EC2 instance metadata (IMDS)
        "169.254.169.253",  # Amazon-provided DNS
        "169.254.170.2",  # ECS task metadata and credentials
        "169.254.170.23",  # EKS Pod Identity agent
        "fd00:ec2::254",  # IMDS over IPv6
        "fd00:ec2::253",  # Amazon-provided DNS over IPv6
        "fd00:ec2::23",  # EKS Pod Identity agent over IPv6
        "100.100.100.200",  # Alibaba Cloud metadata
    )
)
_NAT64: Final = ipaddress.IPv6Network("64:ff9b::/96")


@dataclass(frozen=True)
class AddressPolicy:
    """The deployment's rule for webhook addresses.

    The default refuses everything but public addresses. The local stack uses
    ``AddressPolicy.local()``, which allows the loopback network so a receiver
    on 127.0.0.1 can be tried out.
    """

    allow_private: bool = False
    allowed_networks: tuple[IPNetwork, ...] = ()

    @classmethod
    def local(cls) -> AddressPolicy:
        return cls(allowed_networks=parse_networks(["127.0.0.0/8", "::1/128"]))

    @classmethod
    def from_settings(cls, allow_private: bool, networks: Iterable[str] = ()) -> AddressPolicy:
        """From deployment settings: a flag and CIDR strings such as ``10.1.0.0/16``."""
        return cls(allow_private=allow_private, allowed_networks=parse_networks(networks))

    def refusal(self, address: str | IPAddress) -> str | None:
        """Why ``address`` may not be called, or ``None`` when it may."""
        ip = ipaddress.ip_address(address) if isinstance(address, str) else address
        if isinstance(ip, ipaddress.IPv6Address) and ip.scope_id:
            ip = ipaddress.IPv6Address(str(ip).split("%", 1)[0])
        if any(ip.version == net.version and ip in net for net in self.allowed_networks):
            return None
        reason = self._own_refusal(ip)
        if reason is not None:
            return reason
        embedded = _embedded_ipv4(ip)
        if embedded is not None:
            inner = self.refusal(embedded)
            if inner is not None:
                return f"carries {embedded}, which {inner}"
        return None

    def url_refusal(self, url: str) -> str | None:
        """Why a webhook URL can never be delivered under this policy (its host
        is an address ``refusal`` refuses), or ``None``: a name, or an address
        that may be called. A URL that does not parse is left to the URL's
        own checks."""
        try:
            host = urlsplit(url).hostname
        except ValueError:
            return None
        address = literal_address(host or "")
        if address is None:
            return None
        reason = self.refusal(address)
        if reason is None:
            return None
        try:  # a numeric form of an address is named with the address it is
            ipaddress.ip_address(host or "")
            written = ""
        except ValueError:
            written = f" (which is {address})"
        return f"{host}{written} {reason}, where webhooks are not delivered"

    def _own_refusal(self, ip: IPAddress) -> str | None:
        if ip in METADATA_ADDRESSES:
            return "is a cloud metadata address"
        if _embedded_ipv4(ip) is not None:
            return None  # judged by the IPv4 address inside
        if ip.is_unspecified:
            return "is an unspecified address"
        if ip.is_multicast:
            return "is a multicast address"
        if ip.is_link_local:
            return "is a link-local address"
        if ip.is_loopback:
            return None if self.allow_private else "is a loopback address"
        if ip.is_reserved:
            return "is a reserved address"
        if ip.is_private or not ip.is_global:
            return None if self.allow_private else "is a private address"
        return None


def literal_address(host: str) -> IPAddress | None:
    """The address a URL's host names without a DNS lookup, or ``None`` for a
    name: an IPv4 or IPv6 address (with or without brackets and a zone), or a
    numeric form the system resolver reads as one (``AI_NUMERICHOST``: decimal,
    octal, hex and short IPv4 forms). A final dot is ignored (``10.0.0.1.``)."""
    text = host.strip("[]")
    text = text[:-1] if text.endswith(".") else text
    if not text:
        return None
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(text, None, flags=socket.AI_NUMERICHOST)
    except (OSError, UnicodeError, ValueError):
        return None
    return ipaddress.ip_address(str(infos[0][4][0]).split("%", 1)[0]) if infos else None


def parse_networks(networks: Iterable[str]) -> tuple[IPNetwork, ...]:
    """CIDR strings as networks; a bare address is a /32 (or /128)."""
    return tuple(ipaddress.ip_network(n.strip(), strict=False) for n in networks if n.strip())


def _embedded_ipv4(ip: IPAddress) -> ipaddress.IPv4Address | None:
    if not isinstance(ip, ipaddress.IPv6Address):
        return None
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip.teredo is not None:
        return ip.teredo[1]
    if ip in _NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None
