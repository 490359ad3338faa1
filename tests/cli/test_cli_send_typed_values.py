"""``amqp-sansio send``'s typed values (``--property``, ``--app-property``, ``--annotation``),
parsed whole: every prefix to its AMQP type (core spec 1.6), every properties field to the
type the spec gives it (3.2.4), and every bad value one error line with exit status 2,
before anything connects (the URL names a port nothing listens on)."""

from __future__ import annotations

import subprocess
import uuid

import pytest
from amqp_sansio.adapters import cli
from amqp_sansio.adapters.cli import values
from support.broker_process import amqp_sansio_command, free_port

from amqp_sansio.codec.amqp10 import types as t

NOWHERE = f"amqp://127.0.0.1:{free_port()}/q"


@pytest.mark.parametrize(
    ("text", "value", "kind"),
    [
        ("plain", "plain", str),
        ("str:int:5", "int:5", str),
        ("http://x/y", "http://x/y", str),  # not a prefix: the text as it is
        ("", "", str),
        ("symbol:x-opt-a", "x-opt-a", t.Symbol),
        ("bool:true", True, bool),
        ("bool:False", False, bool),
        ("byte:-128", -128, t.Byte),
        ("short:32767", 32767, t.Short),
        ("int:-5", -5, t.Int),
        ("long:9223372036854775807", 2**63 - 1, int),
        ("ubyte:255", 255, t.UByte),
        ("ushort:65535", 65535, t.UShort),
        ("uint:4294967295", 2**32 - 1, t.UInt),
        ("ulong:18446744073709551615", 2**64 - 1, t.ULong),
        ("float:1.5", 1.5, t.Float),
        ("double:-2.25", -2.25, float),
        ("char:é", "é", t.Char),
        ("timestamp:0", 0, t.Timestamp),
        ("timestamp:2026-11-26T10:00:00Z", 1795687200000, t.Timestamp),
        ("timestamp:2026-11-26T11:00:00.250+01:00", 1795687200250, t.Timestamp),
        ("timestamp:2026-11-26T10:00:00", 1795687200000, t.Timestamp),  # no zone: UTC
        (
            "uuid:0f8f7b8e-5c58-4a4a-9b7e-2d0c1d2e3f40",
            uuid.UUID("0f8f7b8e-5c58-4a4a-9b7e-2d0c1d2e3f40"),
            uuid.UUID,
        ),
        ("binary:AAEC/w==", b"\x00\x01\x02\xff", bytes),
        ("null:", None, type(None)),
    ],
)
def test_each_prefix_makes_its_amqp_type(text: str, value: object, kind: type) -> None:
    got = values.typed(text)
    assert got == value and type(got) is kind


def test_timestamp_now_is_the_current_time() -> None:
    import time

    before = int(time.time() * 1000)
    got = values.typed("timestamp:now")
    assert type(got) is t.Timestamp and before <= got <= int(time.time() * 1000)


@pytest.mark.parametrize(
    ("text", "attribute", "value", "kind"),
    [
        ("message-id=abc", "message_id", "abc", str),
        ("message_id=ulong:7", "message_id", 7, t.ULong),
        ("message-id=uuid:0f8f7b8e-5c58-4a4a-9b7e-2d0c1d2e3f40", "message_id", None, uuid.UUID),
        ("correlation-id=binary:AAE=", "correlation_id", b"\x00\x01", bytes),
        ("user-id=guest", "user_id", b"guest", bytes),
        ("user-id=binary:/wA=", "user_id", b"\xff\x00", bytes),
        ("to=/queue/a", "to", "/queue/a", str),
        ("subject=s:x", "subject", "s:x", str),
        ("reply-to=str:int:1", "reply_to", "int:1", str),
        ("content-type=text/plain", "content_type", "text/plain", t.Symbol),
        ("content-encoding=gzip", "content_encoding", "gzip", t.Symbol),
        ("absolute-expiry-time=1000", "absolute_expiry_time", 1000, t.Timestamp),
        ("creation-time=timestamp:1970-01-01T00:00:01Z", "creation_time", 1000, t.Timestamp),
        ("group-id=g", "group_id", "g", str),
        ("group-sequence=uint:3", "group_sequence", 3, t.UInt),
        ("GROUP-SEQUENCE=4", "group_sequence", 4, t.UInt),
        ("reply-to-group-id=r", "reply_to_group_id", "r", str),
    ],
)
def test_each_property_is_typed_as_the_spec_types_it(
    text: str, attribute: str, value: object, kind: type
) -> None:
    name, got = values.property_value(text)
    assert name == attribute and type(got) is kind
    if value is not None:
        assert got == value


#: Bad values, each with the end of its one error line.
BAD = [
    (["--app-property", "k=int:x"], "argument --app-property: k=int:x: not a whole number"),
    (["--app-property", "k=int:2147483648"], "k=int:2147483648: Int must be in"),
    (["--app-property", "k=uint:-1"], "k=uint:-1: UInt must be in"),
    (["--app-property", "k=long:9223372036854775808"], "a long is -2**63 to 2**63-1"),
    (["--app-property", "k=bool:maybe"], "k=bool:maybe: a bool is true or false"),
    (["--app-property", "k=float:1e99"], "outside the range of a 32-bit float"),
    (["--app-property", "k=double:x"], "k=double:x: not a number"),
    (["--app-property", "k=char:ab"], "exactly one character"),
    (["--app-property", "k=timestamp:yesterday"], "a timestamp is milliseconds since 1970"),
    (["--app-property", "k=uuid:1"], "k=uuid:1: not a UUID"),
    (["--app-property", "k=binary:!!"], "binary is written in base64"),
    (["--app-property", "k=null:x"], "null takes no value"),
    (["--app-property", "novalue"], "argument --app-property: not KEY=VALUE: 'novalue'"),
    (["--app-property", "=v"], "not KEY=VALUE: '=v'"),
    (["--annotation", "é=1"], "an annotation's key is a symbol (ASCII): 'é'"),
    (["--annotation", "x-opt-a=ubyte:256"], "x-opt-a=ubyte:256: UByte must be in"),
    (["--property", "foo=1"], "argument --property: no property 'foo' (core spec 3.2.4:"),
    (["--property", "message-id=int:5"], "a message id is a string, ulong:, uuid: or binary:"),
    (["--property", "group-sequence=x"], "group-sequence=x: not a whole number"),
    (["--property", "group-sequence=uint:-1"], "UInt must be in"),
    (["--property", "content-type=é"], "content-type=é: a symbol is ASCII"),
    (["--property", "subject=int:1"], "a string (no type prefix but str:)"),
    (["--property", "creation-time=long:1"], "a timestamp (no type prefix but timestamp:)"),
    (["--property", "user-id=binary:%"], "binary is written in base64"),
    (["--priority", "256"], "argument --priority: a priority is 0 to 255, not 256"),
    (["--ttl", "-1"], "argument --ttl: a ttl is 0 to 4294967295 milliseconds, not -1"),
    (["--body", "x", "--lines", "-"], "argument --lines: not allowed with argument --body"),
]


@pytest.mark.parametrize(("args", "message"), BAD)
def test_a_bad_value_is_one_error_line_and_exit_status_2(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        cli.main(["send", NOWHERE, *args])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    last = err.splitlines()[-1]
    assert last.startswith("amqp-sansio send: error: ") and message in last, err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--offset", "sometime"], "argument --offset: not an offset: 'sometime'"),
        (["--offset", "-1"], "argument --offset: an offset is 0 or more, not -1"),
        (["--print", "--json"], "argument --json: not allowed with argument --print"),
    ],
)
def test_a_bad_receive_option_is_one_error_line_and_exit_status_2(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        cli.main(["receive", NOWHERE, *args])
    assert exit_.value.code == 2
    last = capsys.readouterr().err.splitlines()[-1]
    assert last.startswith("amqp-sansio receive: error: ") and message in last


def test_the_installed_command_says_it_in_one_line() -> None:
    result = subprocess.run(
        [*amqp_sansio_command(), "send", NOWHERE, "--app-property", "n=int:five"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.splitlines()[-1] == (
        "amqp-sansio send: error: argument --app-property: n=int:five: not a whole number"
    )
    assert "Traceback" not in result.stderr


def test_unreadable_body_file_and_lines_are_usage_errors(tmp_path: object) -> None:
    for option in ("--body-file", "--lines"):
        result = subprocess.run(
            [*amqp_sansio_command(), "send", NOWHERE, option, "/nonexistent/file"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 2, result.stderr
        assert result.stderr == (
            f"amqp-sansio send: error: cannot read {option} /nonexistent/file: "
            "no such file or directory\n"
        )
