"""One engine contract (docs/architecture.rst, "The engine contract"): every protocol
engine offers ``receive_data(data, now) -> list[Event]``, ``handle_timer(now) ->
list[Event]``, ``data_to_send() -> bytes`` and ``next_deadline() -> float | None``, written
once as :class:`amqp_sansio.engine.contract.ProtocolEngine`; the 0-9-1 engine's old convention
(``next_event``, ``events``, ``tick``) and its shim (``EngineBytes``) are gone."""

from __future__ import annotations

import importlib
import inspect
import typing

import pytest
from support import ROOT

import amqp_sansio
from amqp_sansio.engine import amqp010 as engine010
from amqp_sansio.engine import amqp091 as engine091
from amqp_sansio.engine.contract import ProtocolEngine
from amqp_sansio.events import Event

ENGINES = {
    "AMQP 1.0": amqp_sansio.Connection,
    "AMQP 0-9-1": engine091.Connection,
    "AMQP 0-10": engine010.Connection,
}

#: The contract's calls: their parameters after ``self`` (the required ones) and their
#: return annotation, as the engines' own annotations resolve.
CALLS = {
    "receive_data": (["data", "now"], list[Event]),
    "handle_timer": (["now"], list[Event]),
    "data_to_send": ([], bytes),
    "next_deadline": ([], float | None),
}


def test_the_protocol_names_the_four_calls() -> None:
    members = {name for name, _ in inspect.getmembers(ProtocolEngine, inspect.isfunction)}
    assert set(CALLS) <= members
    assert typing.get_type_hints(ProtocolEngine.receive_data)["return"] == list[Event]


@pytest.mark.parametrize("engine", ENGINES.values(), ids=list(ENGINES))
def test_each_engine_class_meets_the_contract(engine: type) -> None:
    """Structurally: each call exists with the contract's required parameters and return
    type (extra parameters must be optional)."""
    for name, (params, returns) in CALLS.items():
        method = getattr(engine, name)
        signature = inspect.signature(method)
        required = [
            p.name
            for p in list(signature.parameters.values())[1:]
            if p.default is inspect.Parameter.empty
            and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        ]
        assert required == params, (engine, name, signature)
        hints = typing.get_type_hints(method, vars(importlib.import_module(engine.__module__)))
        assert hints["return"] == returns, (engine, name, hints["return"])


@pytest.mark.parametrize("old", ["next_event", "events", "tick"])
def test_the_0_9_1_engines_old_calls_are_gone(old: str) -> None:
    assert not hasattr(engine091.Connection, old)


def test_engine_bytes_is_gone() -> None:
    assert not (ROOT / "amqp_sansio" / "engine" / "amqp091" / "layer.py").exists()
    with pytest.raises(ImportError):
        importlib.import_module("amqp_sansio.engine.amqp091.layer")
    for folder in ("amqp_sansio", "adapters", "tests", "fuzz"):
        for path in (ROOT / folder).rglob("*.py"):
            if path.name != "test_engine_contract.py":
                assert "EngineBytes" not in path.read_text(encoding="utf-8"), path


def test_events_come_back_from_the_calls_only() -> None:
    """Real bytes between a 0-9-1 client and server driven only through the contract: the
    peer's events come back from receive_data, an application's call's event
    (``accept_open``'s ConnectionOpened) from the next handle_timer."""
    client = engine091.Connection(engine091.Role.CLIENT)
    server = engine091.Connection(engine091.Role.SERVER)
    ends: list[ProtocolEngine] = [client, server]
    client.start(0.0)
    server.start(0.0)
    got: dict[int, list[Event]] = {0: [], 1: []}
    for _ in range(10):
        for at, end in enumerate(ends):
            data = end.data_to_send()
            if data:
                got[1 - at] += ends[1 - at].receive_data(data, 0.0)
        for event in got[1]:
            if isinstance(event, engine091.LoginRequested):
                server.accept_login("guest")
            elif isinstance(event, engine091.OpenRequested):
                server.accept_open()
                [mine] = server.handle_timer(0.0)
                assert isinstance(mine, engine091.ConnectionOpened) and mine.identity == "guest"
        got[1] = []
    [opened] = got[0]
    assert isinstance(opened, engine091.ConnectionOpened) and opened.identity == "guest"
