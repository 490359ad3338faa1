"""What every benchmark shares, whatever the protocol: the result's shape, the alternating
rounds (:func:`compare`), the table (:func:`format_table`).

Machines are noisy: the two implementations are measured in alternating short rounds and
each side keeps its median, so a burst of load hits both. Compare the ratios, not absolute
figures across runs. Every result has the shape
``{name: {"ours": float, "proton": float | None, "ratio": float | None, "unit": str}}``
(the peer's key is its name: ``"proton"``, ``"pamqp"``, ``"rbfly"``, ...). A result may put
ours next to more than one peer, one peer to a row (``bench codec``: ``"encode"`` against
Proton, ``"encode vs rbfly"`` against rbfly).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

__all__ = ["Result", "compare", "format_table"]

Result = dict[str, dict[str, Any]]

#: Units of figures that only we report (tracemalloc sees no C allocations).
_MEMORY_UNITS = frozenset({"bytes", "bytes/delivery", "copies"})


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


#: The package to install for each peer a benchmark compares with.
_PEER_PACKAGES = {"proton": "python-qpid-proton", "pamqp": "pamqp", "rbfly": "rbfly"}
#: What to say of a missing peer that is not a package to install.
_PEER_MISSING = {
    "qpid-python": "qpid-python is not found: no comparison (set AMQP_SANSIO_PEERS_DIR to "
    "the folder holding qpid-python/)",
}


def _peer_of(row: dict[str, Any]) -> str:
    """The peer a result's row compares with: its one key besides ours, ratio and unit."""
    (peer,) = (k for k in row if k not in ("ours", "ratio", "unit"))
    return peer


def _missing(peer: str) -> str:
    package = _PEER_PACKAGES.get(peer, peer)
    return _PEER_MISSING.get(
        peer,
        f"{package} is not installed: no comparison (pip install 'amqp-sansio[test]' or {package})",
    )


def format_table(title: str, results: Result, peer: str = "proton") -> str:
    """The results as a table: ours, the peer's (``peer``: its key in each result), ratio.
    When the rows compare with more than one peer, the peer's figure is under ``theirs``
    and its name ends each row. Each peer not measured is said to be missing."""
    width = max(10, *(len(name) + 2 for name in results))
    peers = {name: _peer_of(r) for name, r in results.items()}
    mixed = set(peers.values()) - {peer} != set()
    heading = "theirs" if mixed else peer
    units = max(len("unit"), *(len(r["unit"]) for r in results.values()))
    lines = [title, f"{'':{width}}{'ours':>14}{heading:>14}{'ratio':>10}  unit"]
    if mixed:
        lines[1] = f"{lines[1]:<{width + 40 + units}}  peer"
    for name, r in results.items():
        theirs = "n/a" if r[peers[name]] is None else f"{r[peers[name]]:,.0f}"
        ratio = "n/a" if r["ratio"] is None else f"{r['ratio']:.2f}x"
        ours = f"{r['ours']:,.2f}" if r["unit"] == "copies" else f"{r['ours']:,.0f}"
        line = f"{name:{width}}{ours:>14}{theirs:>14}{ratio:>10}  {r['unit']}"
        lines.append(f"{line:<{width + 40 + units}}  {peers[name]}" if mixed else line)
    missing = {
        peers[name]: None
        for name, r in results.items()
        if r[peers[name]] is None and r["unit"] not in _MEMORY_UNITS
    }
    lines.extend(_missing(p) for p in missing)
    if any(r["unit"] in _MEMORY_UNITS for r in results.values()):
        lines.append("memory: ours only, as tracemalloc sees Python's allocations, not Proton's")
    return "\n".join(lines)
