"""The codec benchmark (``amqp-sansio bench codec``): one typical message encoded and
decoded, ours next to Qpid Proton's; and what every benchmark shares: the result's shape,
the alternating rounds, the table.

Machines are noisy: the two implementations are measured in alternating short rounds and
each side keeps its median, so a burst of load hits both. Compare the ratios, not absolute
figures across runs. Every result has the shape
``{name: {"ours": float, "proton": float | None, "ratio": float | None, "unit": str}}``.
"""

from __future__ import annotations

import statistics
import time
import uuid
from collections.abc import Callable
from typing import Any

import amqp_sansio as amqp
import amqp_sansio.codec.amqp10

Result = dict[str, dict[str, Any]]

#: Units of figures that only we report (tracemalloc sees no C allocations).
_MEMORY_UNITS = frozenset({"bytes", "bytes/delivery"})

_BODY = bytes(range(256))
_MESSAGE_ID = "order-000042"
_TO = "queue://orders"
_SUBJECT = "order.created"
_CONTENT_TYPE = "application/octet-stream"
_CORRELATION_ID = str(uuid.UUID(int=0x1234_5678_9ABC_DEF0_0FED_CBA9_8765_4321))
_APP_PROPS: dict[str, Any] = {
    "customer": "ACME Corp",
    "amount": 1234,
    "rate": 0.25,
    "express": True,
    "created": amqp.codec.amqp10.Timestamp(1_700_000_000_000),
}


def typical_message() -> amqp.Message:
    """The benchmark message: durable header with priority 4; message-id, to, subject,
    content-type and correlation-id; five application properties of mixed types; a 256-byte
    data body."""
    return amqp.Message(
        header=amqp.Header(durable=True, priority=4),
        properties=amqp.Properties(
            message_id=_MESSAGE_ID,
            to=_TO,
            subject=_SUBJECT,
            content_type=amqp.Symbol(_CONTENT_TYPE),
            correlation_id=_CORRELATION_ID,
        ),
        application_properties=dict(_APP_PROPS),
        body=_BODY,
    )


def _proton_message() -> Any:
    import proton

    props = dict(_APP_PROPS)
    props["created"] = proton.timestamp(int(_APP_PROPS["created"]))
    return proton.Message(
        durable=True,
        priority=4,
        id=_MESSAGE_ID,
        address=_TO,
        subject=_SUBJECT,
        content_type=_CONTENT_TYPE,
        correlation_id=_CORRELATION_ID,
        properties=props,
        body=_BODY,
        inferred=True,
    )


def _rate(fn: Callable[[], object], seconds: float) -> float:
    """Operations per second of ``fn`` over about ``seconds``."""
    n = 64
    while True:  # size a batch to about 20 ms
        start = time.perf_counter()
        for _ in range(n):
            fn()
        elapsed = time.perf_counter() - start
        if elapsed > 0.02:
            break
        n *= 2
    batch = n
    done = 0
    start = time.perf_counter()
    deadline = start + seconds
    now = start
    while now < deadline:
        for _ in range(batch):
            fn()
        done += batch
        now = time.perf_counter()
    return done / (now - start)


def compare(
    ours: Callable[[], object],
    theirs: Callable[[], object] | None,
    seconds: float,
    rounds: int = 5,
    *,
    peer: str = "proton",
) -> dict[str, Any]:
    """Ours and the peer's rates (medians of ``rounds`` alternating rounds) under the keys
    ``"ours"`` and ``peer``, their ratio, and the unit."""
    per_round = seconds / rounds
    our_rates: list[float] = []
    their_rates: list[float] = []
    for _ in range(rounds):
        our_rates.append(_rate(ours, per_round))
        if theirs is not None:
            their_rates.append(_rate(theirs, per_round))
    ours_median = statistics.median(our_rates)
    theirs_median = statistics.median(their_rates) if their_rates else None
    return {
        "ours": round(ours_median, 1),
        peer: None if theirs_median is None else round(theirs_median, 1),
        "ratio": None if theirs_median is None else round(ours_median / theirs_median, 3),
        "unit": "ops/s",
    }


def codec_benchmark(seconds: float = 1.0) -> Result:
    """Encode and decode :func:`typical_message`, ours and (if installed) Proton's."""
    message = typical_message()
    encoded = message.encode()
    if amqp.Message.decode(encoded) != message:
        raise AssertionError("the benchmark message does not round-trip")
    proton_encode: Callable[[], object] | None = None
    proton_decode: Callable[[], object] | None = None
    try:
        import proton
    except ImportError:
        proton = None  # type: ignore[assignment]
    if proton is not None:
        pmsg = _proton_message()
        pencoded = bytes(pmsg.encode())
        # Same work: each side must read the other's bytes as the same message.
        check = proton.Message()
        check.decode(encoded)
        if check.id != _MESSAGE_ID or bytes(memoryview(check.body)) != _BODY:  # type: ignore[arg-type]
            raise AssertionError("proton does not read our benchmark message back")
        theirs = amqp.Message.decode(pencoded)
        if theirs.properties != message.properties or theirs.body != message.body:
            raise AssertionError("we do not read proton's benchmark message back")
        target: Any = proton.Message()
        proton_encode = pmsg.encode
        proton_decode = lambda: target.decode(pencoded)  # noqa: E731
    results: Result = {
        "encode": compare(message.encode, proton_encode, seconds),
        "decode": compare(lambda: amqp.Message.decode(encoded), proton_decode, seconds),
    }
    return results


#: The package to install for each peer a benchmark compares with.
_PEER_PACKAGES = {"proton": "python-qpid-proton", "pamqp": "pamqp"}


def format_table(title: str, results: Result, peer: str = "proton") -> str:
    """The results as a table: ours, the peer's (``peer``: its key in each result), ratio."""
    width = max(10, *(len(name) + 2 for name in results))
    lines = [title, f"{'':{width}}{'ours':>14}{peer:>14}{'ratio':>10}  unit"]
    for name, r in results.items():
        theirs = "n/a" if r[peer] is None else f"{r[peer]:,.0f}"
        ratio = "n/a" if r["ratio"] is None else f"{r['ratio']:.2f}x"
        lines.append(f"{name:{width}}{r['ours']:>14,.0f}{theirs:>14}{ratio:>10}  {r['unit']}")
    if any(r[peer] is None and r["unit"] not in _MEMORY_UNITS for r in results.values()):
        package = _PEER_PACKAGES.get(peer, peer)
        lines.append(
            f"{package} is not installed: no comparison "
            f"(pip install 'amqp-sansio[test]' or {package})"
        )
    if any(r["unit"] in _MEMORY_UNITS for r in results.values()):
        lines.append("memory: ours only, as tracemalloc sees Python's allocations, not Proton's")
    return "\n".join(lines)
