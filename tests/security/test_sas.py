"""SAS tokens (amqp_sansio/security/sas.py): made as the Azure SDKs make them (checked
against an independent rendering of their algorithm), parsed whole and cut at every length,
hostile text refused with SasTokenError only."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import urllib.parse

import pytest
from hypothesis import given
from hypothesis import strategies as st

from amqp_sansio.security.sas import (
    MAX_TOKEN_LENGTH,
    SasTokenError,
    covers,
    make_sas_token,
    parse_sas_token,
    path_of,
)

URI = "sb://example.servicebus.windows.net/orders"
KEY = "s3cr3t+key/=="


def azure_token(audience: str, policy: str, key: str, expiry: int) -> str:
    """What azure-servicebus's ``_pyamqp`` ``generate_sas_token`` makes (its algorithm,
    written again here: urlencode of sr, sig, se, skn)."""
    encoded_uri = urllib.parse.quote_plus(audience)
    sign = f"{encoded_uri}\n{expiry}".encode()
    signature = base64.b64encode(hmac.new(key.encode(), sign, hashlib.sha256).digest())
    fields = {"sr": audience, "sig": signature, "se": str(expiry), "skn": policy}
    return "SharedAccessSignature " + urllib.parse.urlencode(fields)


def test_ours_and_azures_agree() -> None:
    ours = make_sas_token(URI, "Root Key", KEY, 1_700_000_600)
    theirs = azure_token(URI, "Root Key", KEY, 1_700_000_600)
    for text in (ours, theirs):
        token = parse_sas_token(text)
        assert token.resource == URI
        assert token.key_name == "Root Key"
        assert token.expiry == 1_700_000_600
        assert token.signed_by(KEY)
        assert not token.signed_by(KEY + "x")
        assert not token.expired(1_700_000_599) and token.expired(1_700_000_600)
        assert KEY not in repr(token) and token.signature not in repr(token)
    assert parse_sas_token(ours).signature == parse_sas_token(theirs).signature


def test_fields_in_any_order() -> None:
    text = make_sas_token(URI, "k", KEY, 2_000_000_000)
    fields = text.removeprefix("SharedAccessSignature ").split("&")
    shuffled = "SharedAccessSignature " + "&".join(reversed(fields))
    assert parse_sas_token(shuffled).signed_by(KEY)


def test_a_changed_resource_or_expiry_breaks_the_signature() -> None:
    text = make_sas_token(URI, "k", KEY, 2_000_000_000)
    assert not parse_sas_token(text.replace("se=2000000000", "se=2000000001")).signed_by(KEY)
    assert not parse_sas_token(text.replace("orders", "orderz")).signed_by(KEY)


@pytest.mark.parametrize(
    ("text", "why"),
    [
        (None, "a string"),
        (b"SharedAccessSignature sr=a", "a string"),
        ("Bearer abc", "begins with"),
        ("SharedAccessSignature ", "fields"),
        ("SharedAccessSignature sr=a&sig=b&se=1", "no skn"),
        ("SharedAccessSignature sr=a&sig=b&skn=k", "no se"),
        ("SharedAccessSignature sr=a&sr=a&sig=b&se=1&skn=k", "twice"),
        ("SharedAccessSignature sr=a&sig=b&se=soon&skn=k", "whole seconds"),
        ("SharedAccessSignature sr=a&sig=b&se=-1&skn=k", "whole seconds"),
        ("SharedAccessSignature sr=a&sig=b&se=1.5&skn=k", "whole seconds"),
        ("SharedAccessSignature sr=a&sig=b&se=\u0661&skn=k", "whole seconds"),
        ("SharedAccessSignature sr=a&sig=b&se=" + "9" * 40 + "&skn=k", "whole seconds"),
        ("SharedAccessSignature sr=&sig=b&se=1&skn=k", "not empty"),
        ("SharedAccessSignature sr=a&sig=b&se=1&skn=k&x=y", "fields"),
        ("SharedAccessSignature sr=a&sigSECRET&se=1&skn=k", "fields"),
        ("SharedAccessSignature sr=" + "a" * MAX_TOKEN_LENGTH, "characters"),
    ],
)
def test_malformed_tokens(text: object, why: str) -> None:
    with pytest.raises(SasTokenError, match=why) as info:
        parse_sas_token(text)
    assert "SECRET" not in str(info.value)
    assert info.value.condition == "amqp:unauthorized-access"


def test_every_cut_of_a_token_parses_or_is_refused() -> None:
    """A token cut at each length (as a reader that stops short would see it)."""
    text = make_sas_token(URI, "k", KEY, 2_000_000_000)
    for end in range(len(text)):
        try:
            token = parse_sas_token(text[:end])
        except SasTokenError:
            continue
        assert not token.signed_by(KEY)  # a cut in the signature, the name or se
    assert parse_sas_token(text).signed_by(KEY)


@given(st.text(max_size=300))
def test_any_text_parses_or_raises_sas_token_error(text: str) -> None:
    for candidate in (text, "SharedAccessSignature " + text):
        with contextlib.suppress(SasTokenError):
            parse_sas_token(candidate)


@pytest.mark.parametrize(
    ("resource", "audience", "covered"),
    [
        ("sb://h/q", "sb://h/q", True),
        ("sb://h/q", "amqp://h/q/", True),
        ("sb://H/q", "amqps://h/q/sub", True),
        ("sb://h/", "sb://h/anything/at/all", True),
        ("sb://h/q", "sb://h/q2", False),
        ("sb://h/q", "sb://h/", False),
        ("sb://h/q", "sb://other/q", False),
        ("", "sb://h/q", False),
    ],
)
def test_covers(resource: str, audience: str, covered: bool) -> None:
    assert covers(resource, audience) is covered


def test_path_of() -> None:
    assert path_of("sb://host/orders/") == "orders"
    assert path_of("amqp://host/a/b") == "a/b"
    assert path_of("sb://host") == ""
