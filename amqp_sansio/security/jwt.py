"""JSON web tokens (RFC 7519) signed with HS256 (HMAC-SHA256, RFC 7518 3.2), the one kind
the broker's ``$cbs`` checks (``docs/cbs.rst``): ``<header>.<claims>.<signature>``, each
base64url without padding. I/O-free and clock-free: ``exp`` and ``nbf`` are checked
against the ``now`` (seconds since the epoch) the caller passes in.

:func:`make_jwt` makes one (for tests, and a client's token provider); :func:`verify_jwt`
checks one and gives its claims, raising :class:`JwtError` for anything else (malformed,
another algorithm, a signature that does not verify, expired): never another exception, so
it is fuzz-friendly. An error's description never holds the token or the key.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import math
import re
from collections.abc import Mapping
from typing import Any

from ..errors import AMQPError

__all__ = ["MAX_JWT_LENGTH", "JwtError", "make_jwt", "verify_jwt"]

#: The longest token :func:`verify_jwt` reads (longer: :class:`JwtError`).
MAX_JWT_LENGTH = 8192
_PART = re.compile(r"[A-Za-z0-9_-]*")
_HEADER = {"alg": "HS256", "typ": "JWT"}


class JwtError(AMQPError):
    """A JSON web token refused: malformed, not HS256, a wrong signature, expired or not
    yet valid."""

    condition = "amqp:unauthorized-access"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(part: str, what: str) -> bytes:
    if not _PART.fullmatch(part) or len(part) % 4 == 1:
        raise JwtError(f"the JWT's {what} is not base64url")
    try:
        return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
    except (binascii.Error, ValueError):  # pragma: no cover - the pattern keeps them out
        raise JwtError(f"the JWT's {what} is not base64url") from None


def _sign(signing_input: str, key: str) -> bytes:
    return hmac.new(key.encode("utf-8"), signing_input.encode("utf-8"), hashlib.sha256).digest()


def make_jwt(claims: Mapping[str, Any], key: str) -> str:
    """A JWT holding ``claims`` (JSON values), signed with ``key`` (HS256)."""
    header = _b64(json.dumps(_HEADER, separators=(",", ":")).encode())
    body = _b64(json.dumps(dict(claims), separators=(",", ":")).encode())
    signing_input = f"{header}.{body}"
    return f"{signing_input}.{_b64(_sign(signing_input, key))}"


def _json_object(part: str, what: str) -> dict[str, Any]:
    try:
        value = json.loads(_unb64(part, what))
    except (ValueError, RecursionError):  # (UnicodeDecodeError is a ValueError)
        raise JwtError(f"the JWT's {what} is not a JSON object") from None
    if not isinstance(value, dict):
        raise JwtError(f"the JWT's {what} is not a JSON object")
    return value


def _time(claims: dict[str, Any], name: str) -> float | None:
    value = claims.get(name)
    if value is None:
        return None
    if type(value) not in (int, float) or not math.isfinite(value):
        raise JwtError(f"the JWT's {name!r} is not a time in seconds")
    return float(value)


def verify_jwt(text: object, key: str, *, now: float) -> dict[str, Any]:
    """The claims of the JWT ``text`` if it is signed with ``key`` (HS256, header ``alg``
    ``HS256``), has an ``exp`` after ``now`` and no ``nbf`` after it; else
    :class:`JwtError`."""
    if not isinstance(text, str):
        raise JwtError(f"a JWT is a string, not {type(text).__name__}")
    if len(text) > MAX_JWT_LENGTH:
        raise JwtError(f"a JWT of {len(text)} characters (at most {MAX_JWT_LENGTH})")
    parts = text.split(".")
    if len(parts) != 3:
        raise JwtError("a JWT is three base64url parts, '.' apart")
    header = _json_object(parts[0], "header")
    if header.get("alg") != "HS256":
        raise JwtError("the JWT is not signed with HS256 (the one algorithm taken)")
    signature = _unb64(parts[2], "signature")
    if not hmac.compare_digest(_sign(f"{parts[0]}.{parts[1]}", key), signature):
        raise JwtError("the JWT's signature does not verify")
    claims = _json_object(parts[1], "claims")
    expires = _time(claims, "exp")
    if expires is None:
        raise JwtError("the JWT has no 'exp'")
    if expires <= now:
        raise JwtError("the JWT has expired")
    not_before = _time(claims, "nbf")
    if not_before is not None and not_before > now:
        raise JwtError("the JWT is not valid yet ('nbf')")
    return claims
