"""The client's token provider (amqp_sansio/client/amqp10/tokens.py) against the broker's
``$cbs`` (amqp_sansio/broker/amqp10/cbs.py), both cores wired in memory on a simulated
clock: the shared recipes (connect, attach, ``put_token``) are run here step by step as an
adapter's runner runs them, the renewals are the core's deadlines."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

import pytest

import amqp_sansio as a
from amqp_sansio.broker import Broker, BrokerConfig, BrokerConnection, Users
from amqp_sansio.client import recipes
from amqp_sansio.client.amqp10 import recipes as recipes10
from amqp_sansio.client.amqp10.core import Core
from amqp_sansio.client.amqp10.tokens import (
    SAS_TOKEN_TYPE,
    CallableTokenProvider,
    SasTokenProvider,
    Token,
    TokenRefusedError,
    renewal_time,
)
from amqp_sansio.client.engines import connect_options
from amqp_sansio.client.ops import LinkDetachedError
from amqp_sansio.client.protocols import connect_protocol
from amqp_sansio.security.sas import parse_sas_token

T = TypeVar("T")
KEY = "the-namespace-key"
URL = "amqp://broker.example:5672/orders"


def secured() -> BrokerConfig:
    users = {"sas-keys": {"Root": {"key": KEY, "rights": ["Send", "Listen"]}}}
    return BrokerConfig(users=Users.from_json(json.dumps(users)))


class Sim:
    """A client core and a broker connection in memory; ``now`` (the client's clock) and
    ``wall`` move only when the test moves them, and apart (the wall clock is not the
    adapter's)."""

    def __init__(self, config: BrokerConfig | None = None) -> None:
        self.broker = Broker(config or BrokerConfig())
        self.now = 50.0
        self.wall = 1_700_000_000.0
        self.core: Core | None = None
        self.conn: BrokerConnection | None = None

    def pump(self) -> None:
        core, conn = self.core, self.conn
        assert core is not None and conn is not None
        for _ in range(1000):
            out = core.data_to_send()
            if out:
                conn.receive_data(out, self.now, wall=self.wall)
            back = conn.data_to_send()
            if back:
                core.receive_data(back, self.now)
            if not out and not back:
                return
        raise AssertionError("never quiet")

    def run(self, recipe: recipes.Recipe[T]) -> T:
        """Carry out a recipe; a wait that pumping does not end fails the test."""
        value: object = None
        step = recipe.send(None)
        while True:
            try:
                value = None
                if isinstance(step, recipes.Wait):
                    self.pump()
                    if not step.ready():
                        raise AssertionError(f"stuck on {step!r}")
                elif step is recipes.DRAIN:
                    pass  # written at once, as a blocking adapter writes
                elif step is recipes.NOW:
                    value = self.now
                elif step is recipes.WALL:
                    value = self.wall
                elif isinstance(step, recipes.Sleep):
                    self.now = max(self.now, step.until)
                elif isinstance(step, recipes.Connect):
                    value = "transport"
                elif isinstance(step, recipes.Start):
                    assert isinstance(step.core, Core)
                    self.core = step.core
                    self.conn = self.broker.accept(self.now, wall=self.wall)
                    value = step.core
                else:
                    raise AssertionError(f"unexpected {step!r}")
            except AssertionError:
                raise
            except BaseException as exc:
                step = recipe.throw(exc)
                continue
            try:
                step = recipe.send(value)
            except StopIteration as stop:
                return stop.value  # type: ignore[no-any-return]

    def lose(self) -> None:
        """The transport breaks; the client connects again (a new broker connection), as
        an adapter's driver does."""
        assert self.core is not None and self.conn is not None
        self.conn.connection_lost(self.now, wall=self.wall)
        self.core.transport_failed(ConnectionResetError("reset"), self.now)
        assert self.core.lost
        transport = self.run(recipes.reconnect_attempts(self.core, None, None))
        assert transport == "transport"
        self.conn = self.broker.accept(self.now, wall=self.wall)
        self.pump()

    def connect(self, provider: Any, url: str = URL, **keywords: Any) -> Core:
        options = connect_options(
            container_id="client",
            idle_timeout=None,
            ssl_context=None,
            allow_insecure_auth=False,
            sasl_mechanisms=None,
            sasl=None,
        )
        core: Core = self.run(
            recipes10.connect(url, options, timeout=None, token_provider=provider, **keywords)
        )
        return core

    def advance(self, seconds: float) -> None:
        """Time passes in steps of a tenth of a second, both sides serving their timers."""
        assert self.core is not None and self.conn is not None
        end = self.now + seconds
        while self.now < end - 1e-9:
            step = min(0.1, end - self.now)
            self.now += step
            self.wall += step
            self.broker.expire(self.wall)
            self.conn.handle_timer(self.now, wall=self.wall)
            deadline = self.core.next_deadline()
            if deadline is not None and self.now >= deadline:
                self.core.handle_timer(self.now)
            self.pump()

    def sender(self, address: str | None) -> Any:
        assert self.core is not None
        return self.run(recipes10.attach_sender(self.core, address, settled=False, name=None))


def _no(sender: Any, op: Any) -> None:  # pragma: no cover - the sends here wait
    raise AssertionError


class Sending:
    """What the send recipe needs of an adapter's sender."""

    def __init__(self, core: Any) -> None:
        self.core = core
        self.settled = False


def test_renewal_time() -> None:
    assert renewal_time(0.0, 3600.0) == pytest.approx(2880.0)  # 80 % of its life
    assert renewal_time(0.0, 100.0) == pytest.approx(70.0)  # 30 s before it expires
    assert renewal_time(0.0, 3.0) == pytest.approx(1.5)  # never before half of it


def test_token_values_are_checked() -> None:
    with pytest.raises(ValueError):
        Token(text="", type="jwt", expires=1.0)
    with pytest.raises(ValueError):
        Token(text="t", type="jwt", expires=float("inf"))
    with pytest.raises(ValueError):
        SasTokenProvider("Root", KEY, lifetime=0)
    assert KEY not in repr(SasTokenProvider("Root", KEY))
    assert "secret" not in repr(Token(text="secret", type="jwt", expires=1.0))


def test_a_link_attaches_after_its_token_is_put_and_a_second_puts_none() -> None:
    sim = Sim(secured())
    core = sim.connect(SasTokenProvider("Root", KEY, lifetime=600))
    sender = sim.sender("orders")
    assert sender.attached.done()
    again = sim.sender("orders")  # the same audience: no second put
    assert again.attached.done()
    tokens = core.tokens
    assert tokens is not None
    assert tokens.audiences == {"amqp://broker.example/orders"}
    assert tokens.puts == 1
    outcome = sim.run(recipes10.send(Sending(sender), a.Message(body=b"x"), None, True, _no))
    assert isinstance(outcome, a.Accepted)


def test_the_request_is_a_put_token_with_the_default_audience() -> None:
    seen: list[tuple[str, float]] = []

    def provide(audience: str, now: float) -> Token:
        seen.append((audience, now))
        return Token(text="anything", type=SAS_TOKEN_TYPE, expires=now + 60)

    sim = Sim()  # an open broker takes any token
    core = sim.connect(CallableTokenProvider(provide), "amqp://broker.example:5673")
    sim.sender("orders")
    assert seen == [("amqp://broker.example:5673/orders", sim.wall)]
    assert core.tokens is not None and core.tokens.puts == 1


def test_the_audience_base_is_the_providers_choice() -> None:
    sim = Sim(secured())
    core = sim.connect(SasTokenProvider("Root", KEY, audience_base="sb://broker.example/"))
    sim.sender("orders")
    assert core.tokens is not None and core.tokens.audiences == {"sb://broker.example/orders"}


def test_a_wrong_key_fails_at_the_link_with_the_status() -> None:
    sim = Sim(secured())
    sim.connect(SasTokenProvider("Root", "not-the-key"))
    with pytest.raises(TokenRefusedError) as caught:
        sim.sender("orders")
    error = caught.value
    assert error.status_code == 401 and "signature" in error.status_description
    assert error.error is not None and error.error.condition == "amqp:unauthorized-access"
    assert isinstance(error, LinkDetachedError)
    assert "not-the-key" not in str(error)


def test_a_renewed_token_keeps_the_link_and_without_renewal_the_broker_detaches() -> None:
    sim = Sim(secured())
    core = sim.connect(SasTokenProvider("Root", KEY, lifetime=10))
    sender = sim.sender("orders")
    tokens = core.tokens
    assert tokens is not None
    first = tokens.next_deadline()
    assert first is not None and first == pytest.approx(sim.now + 5, abs=1.01)
    sim.advance(35)  # three and a half lifetimes
    assert sender.attached.done() and sender.error is None
    assert tokens.puts >= 4
    assert tokens.failure is None
    # Without renewals (the provider's tokens refused from now on) the broker detaches it.
    tokens.provider = SasTokenProvider("Root", "rotated-away")
    sim.advance(25)
    assert tokens.failure is not None and tokens.failure.status_code == 401
    assert isinstance(sender.error, LinkDetachedError)
    assert sender.error.error is not None
    assert sender.error.error.condition == "amqp:unauthorized-access"


def test_the_sas_token_is_signed_for_the_audience() -> None:
    token = SasTokenProvider("Root", KEY, lifetime=60).get_token("sb://h/orders", 1000.5)
    parsed = parse_sas_token(token.text)
    assert parsed.signed_by(KEY) and parsed.resource == "sb://h/orders"
    assert parsed.expiry == token.expires == 1060 and token.type == SAS_TOKEN_TYPE


def test_a_provider_that_returns_no_token_is_a_type_error() -> None:
    bad: Callable[[str, float], Any] = lambda audience, now: "text"  # noqa: E731
    with pytest.raises(TypeError):
        CallableTokenProvider(bad).get_token("sb://h/q", 0.0)


def test_after_a_reconnection_the_tokens_are_put_before_the_links_attach_again() -> None:
    sim = Sim(secured())
    core = sim.connect(SasTokenProvider("Root", KEY, lifetime=600), reconnect=True)
    sender = sim.sender("orders")
    receiver = sim.run(
        recipes10.attach_receiver(
            core,
            "orders",
            credit=5,
            auto_accept=True,
            dynamic=False,
            name=None,
            filters=None,
            selector=None,
        )
    )
    tokens = core.tokens
    assert tokens is not None and tokens.puts == 1
    sim.lose()
    assert core.reconnects == 1
    assert tokens.puts == 2  # put again on the new connection ...
    for link in (sender, receiver):  # ... before the links attached again: none refused
        assert link.attached.done() and link.error is None
    outcome = sim.run(recipes10.send(Sending(sender), a.Message(body=b"y"), None, True, _no))
    assert isinstance(outcome, a.Accepted)
    delivery = sim.run(recipes10.receive(receiver))
    assert delivery is not None and delivery.message.body == a.Data(b"y")
    sim.advance(500)  # renewals go on, on the new connection
    assert tokens.puts >= 3 and sender.error is None


@pytest.mark.parametrize("protocol", ["0-9-1", "0-10"])
def test_a_token_provider_is_an_amqp10_option(protocol: str) -> None:
    with pytest.raises(ValueError, match=r"token_provider: AMQP 1\.0 options"):
        connect_protocol(
            "amqp://127.0.0.1:5672/vh",
            protocol,
            timeout=None,
            ssl_context=None,
            allow_insecure_auth=False,
            reconnect=None,
            on_reconnect=None,
            idle_timeout=None,
            container_id=None,
            sasl_mechanisms=None,
            sasl=None,
            token_provider=SasTokenProvider("Root", KEY),
        )


def test_a_provider_that_fails_at_a_renewal_is_reported_not_raised_in_the_timers() -> None:
    calls: list[float] = []

    def once(audience: str, now: float) -> Token:
        calls.append(now)
        if len(calls) > 1:
            raise RuntimeError("the identity service is down")
        return SasTokenProvider("Root", KEY, lifetime=10).get_token(audience, now)

    sim = Sim(secured())
    core = sim.connect(CallableTokenProvider(once))
    sender = sim.sender("orders")
    sim.advance(6)  # the renewal: the provider raises, the timer goes on
    tokens = core.tokens
    assert tokens is not None and tokens.failure is not None
    assert "identity service is down" in str(tokens.failure)
    assert isinstance(tokens.failure.__cause__, RuntimeError)
    sim.advance(6)  # then the broker detaches the link
    assert isinstance(sender.error, LinkDetachedError)
