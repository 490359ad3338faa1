"""JSON web tokens, HS256 (amqp_sansio/security/jwt.py): made, checked against an
independent rendering of RFC 7515's signing, and hostile tokens refused with JwtError only."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from amqp_sansio.security.jwt import MAX_JWT_LENGTH, JwtError, make_jwt, verify_jwt

KEY = "jwt-secret"
NOW = 1_700_000_000.0


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def signed(header: object, claims: object, key: str = KEY) -> str:
    """A token as RFC 7515 signs one (written again here)."""
    head = b64(json.dumps(header).encode())
    body = b64(json.dumps(claims).encode())
    sig = hmac.new(key.encode(), f"{head}.{body}".encode(), hashlib.sha256).digest()
    return f"{head}.{body}.{b64(sig)}"


def test_made_and_verified() -> None:
    claims = {"aud": "sb://h/q", "exp": NOW + 60, "roles": ["Send"]}
    assert verify_jwt(make_jwt(claims, KEY), KEY, now=NOW) == claims
    assert verify_jwt(signed({"alg": "HS256"}, claims), KEY, now=NOW) == claims


@pytest.mark.parametrize(
    ("text", "why"),
    [
        (None, "a string"),
        ("a.b", "three"),
        ("a.b.c.d", "three"),
        ("x" * (MAX_JWT_LENGTH + 1), "characters"),
        ("!!.e30.", "base64url"),
        ("e30.e30.e30", "HS256"),  # {} as the header: no alg
        (signed({"alg": "none"}, {"exp": NOW + 60}), "HS256"),
        (signed({"alg": "HS512"}, {"exp": NOW + 60}), "HS256"),
        (signed({"alg": "HS256"}, {"exp": NOW + 60}, key="other"), "signature"),
        (signed({"alg": "HS256"}, {"exp": NOW}), "expired"),
        (signed({"alg": "HS256"}, {}), "no 'exp'"),
        (signed({"alg": "HS256"}, {"exp": "soon"}), "time"),
        (signed({"alg": "HS256"}, {"exp": True}), "time"),
        (signed({"alg": "HS256"}, {"exp": NOW + 60, "nbf": NOW + 1}), "not valid yet"),
        (signed({"alg": "HS256"}, [1, 2]), "JSON object"),
        (signed(["alg"], {"exp": NOW + 60}), "JSON object"),
        (b64(b"[" * 5000) + ".e30.e30", "JSON object"),
        (b64(b"\xff\xfe") + ".e30.e30", "JSON object"),
        (b64(b'{"alg": "HS256"}') + ".e30.a", "base64url"),
    ],
)
def test_refused(text: object, why: str) -> None:
    with pytest.raises(JwtError, match=why) as info:
        verify_jwt(text, KEY, now=NOW)
    assert KEY not in str(info.value)


def test_a_changed_claim_breaks_the_signature() -> None:
    token = make_jwt({"exp": NOW + 60, "roles": ["Listen"]}, KEY)
    head, _, sig = token.split(".")
    forged = b64(json.dumps({"exp": NOW + 60, "roles": ["Manage"]}).encode())
    with pytest.raises(JwtError, match="signature"):
        verify_jwt(f"{head}.{forged}.{sig}", KEY, now=NOW)


def test_every_cut_of_a_token_is_refused() -> None:
    token = make_jwt({"exp": NOW + 60}, KEY)
    for end in range(len(token)):
        with pytest.raises(JwtError):
            verify_jwt(token[:end], KEY, now=NOW)


@given(st.text(max_size=200))
def test_any_text_verifies_or_raises_jwt_error(text: str) -> None:
    for candidate in (text, "eyJhbGciOiJIUzI1NiJ9." + text, text + ".e30.e30"):
        with contextlib.suppress(JwtError):
            verify_jwt(candidate, KEY, now=NOW)
