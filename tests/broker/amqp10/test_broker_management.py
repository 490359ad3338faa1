"""The broker's management node (``$management``, the AMQP Management working draft's
request/response; amqp_sansio/broker/_management.py) driven through the broker's byte
interface, with our engine as the clients, on a simulated clock (tests/support/broker_net.py):
the answers are checked against what the clients sent and received."""

from __future__ import annotations

from typing import Any

import pytest
from support.broker_net import Client, Net, publish

import amqp_sansio as a
import amqp_sansio.codec.amqp10
from amqp_sansio.broker import Broker, BrokerConfig, MemoryStore, Users
from amqp_sansio.broker.amqp10.management import MAX_ATTRIBUTE_NAMES

QUEUE = "org.amqp-sansio.queue"


class Manager:
    """A management client: a sender to ``$management`` and a dynamic reply node."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.replies = client.receiver(None, 100, source=a.Source(dynamic=True))
        assert self.replies.remote is not None and self.replies.remote.source is not None
        self.reply_to = self.replies.remote.source.address
        self.requests = client.sender("$management")
        assert self.requests.state is a.LinkState.ATTACHED
        self.ids = 0

    def send(self, app: dict[str, Any] | None, body: Any = None, **props: Any) -> a.Delivery:
        self.ids += 1
        props.setdefault("message_id", f"m{self.ids}")
        props.setdefault("reply_to", self.reply_to)
        message = a.Message(properties=a.Properties(**props), application_properties=app, body=body)
        return self.client.send(self.requests, message)

    def ask(self, app: dict[str, Any] | None, body: Any = None, **props: Any) -> a.Message:
        delivery = self.send(app, body, **props)
        assert isinstance(delivery.remote_state, a.Accepted), delivery.remote_state
        (event,) = self.client.received(self.replies)
        self.replies.settle(event.delivery, a.Accepted())
        self.client.net.pump()
        response = a.Message.decode(event.data)
        assert response.properties is not None
        expected = props.get("correlation_id") or props.get("message_id") or f"m{self.ids}"
        assert response.properties.correlation_id == expected
        return response


def status(response: a.Message) -> int:
    assert response.application_properties is not None
    return int(response.application_properties["statusCode"])


def value(response: a.Message) -> Any:
    assert isinstance(response.body, a.AmqpValue)
    return response.body.value


def query(manager: Manager, names: list[str] | None = None, **app: Any) -> list[dict[str, Any]]:
    response = manager.ask({"operation": "QUERY", **app}, {"attributeNames": names or []})
    assert status(response) == 200, response.application_properties
    body = value(response)
    assert response.application_properties is not None
    assert response.application_properties["count"] == len(body["results"])
    return [dict(zip(body["attributeNames"], row, strict=True)) for row in body["results"]]


@pytest.mark.parametrize("chunk", [None, 1])
def test_query_counts_what_was_sent_and_received(chunk: int | None) -> None:
    """Seven sent; two received, one settled: depth, bytes, consumers, unsettled agree
    (the bytes moved in random pieces, and byte by byte)."""
    net = Net(chunk=chunk)
    producer, consumer, admin = net.connect(), net.connect(), net.connect()
    sender = publish(producer, "orders", *(b"order %d" % i for i in range(7)))
    receiver = consumer.receiver("orders", 2)
    got = consumer.received(receiver)
    assert len(got) == 2
    receiver.settle(got[0].delivery, a.Accepted())
    net.pump()
    manager = Manager(admin)
    (row,) = [r for r in query(manager, type="queue") if r["name"] == "orders"]
    queue = net.broker.nodes["orders"]
    assert row["depth"] == 6  # seven sent, one accepted
    assert row["unsettled"] == 1  # one out with the consumer, not settled
    assert row["available"] == 5  # the others, waiting
    assert row["consumers"] == 1
    assert row["producers"] == 1 and sender.state is a.LinkState.ATTACHED
    sizes = sum(len(a.Message(body=b"order %d" % i).encode()) for i in range(2, 7))
    assert row["bytes"] == sizes == queue.bytes  # the five waiting
    assert row["type"] == QUEUE and row["identity"] == "orders"
    assert row["durable"] is False and row["autoDelete"] is True and row["dynamic"] is False
    # The reply node is a dynamic queue of its own, listed too.
    (reply,) = [r for r in query(manager) if r["name"] == manager.reply_to]
    assert reply["dynamic"] is True and reply["consumers"] == 1


def test_read_by_name_and_identity_and_not_found() -> None:
    net = Net()
    publish(net.connect(), "q", b"1", b"2", b"3")
    manager = Manager(net.connect())
    by_name = manager.ask({"operation": "READ", "type": QUEUE, "name": "q"})
    assert status(by_name) == 200
    assert value(by_name)["depth"] == 3
    by_identity = manager.ask({"operation": "READ", "type": "queue", "identity": "q"})
    assert value(by_identity) == value(by_name)
    missing = manager.ask({"operation": "READ", "type": QUEUE, "name": "nope"})
    assert status(missing) == 404 and missing.body is None
    assert missing.application_properties is not None
    assert "nope" in missing.application_properties["statusDescription"]
    wrong_type = manager.ask({"operation": "READ", "type": "stream", "name": "q"})
    assert status(wrong_type) == 404


def test_streams_and_topics_with_their_attributes() -> None:
    net = Net(BrokerConfig(streams=("log",), topics=("news",)))
    p, sub = net.connect(), net.connect()
    publish(p, "log", b"a", b"b", b"c")
    topic_link = sub.receiver("news", 10)
    publish(p, "news", b"x")
    manager = Manager(net.connect())
    rows = {r["name"]: r for r in query(manager)}
    assert rows["log"]["firstOffset"] == 0 and rows["log"]["nextOffset"] == 3
    assert rows["log"]["depth"] == 3 and rows["log"]["type"] == "org.amqp-sansio.stream"
    assert rows["news"]["subscriptions"] == 1 and rows["news"]["consumers"] == 1
    assert rows["news"]["unsettled"] == 1  # the one copy sent to the subscriber
    assert len(sub.received(topic_link)) == 1
    assert rows["news"]["firstOffset"] is None  # not an attribute of a topic: null
    streams = query(manager, ["name", "nextOffset"], entityType="stream")
    assert streams == [{"name": "log", "nextOffset": 3}]


def test_query_pages_in_a_stable_order() -> None:
    net = Net()
    p = net.connect()
    for name in ("c", "a", "e", "b", "d"):
        publish(p, name, b"x")
    manager = Manager(net.connect())
    everything = [r["name"] for r in query(manager, ["name"], type="queue")]
    named = [n for n in everything if not n.startswith("tmp.")]
    assert named == ["a", "b", "c", "d", "e"]
    pages = []
    for offset in range(0, len(everything), 2):
        rows = query(
            manager, ["name"], type="queue", offset=a.codec.amqp10.types.UInt(offset), count=2
        )
        pages += [r["name"] for r in rows]
    assert pages == everything
    assert query(manager, ["name"], offset=100) == []


def test_response_takes_the_requests_correlation_id_when_it_has_one() -> None:
    net = Net()
    manager = Manager(net.connect())
    response = manager.ask({"operation": "QUERY"}, message_id="mine", correlation_id=42)
    assert response.properties is not None and response.properties.correlation_id == 42


@pytest.mark.parametrize(
    ("app", "body", "code"),
    [
        (None, None, 400),  # no application-properties
        ({}, None, 400),  # no operation
        ({"operation": 7}, None, 400),
        ({"operation": "FROB"}, None, 501),
        ({"operation": "CREATE", "type": QUEUE, "name": "x"}, None, 501),
        ({"operation": "DELETE", "type": QUEUE, "name": "x"}, None, 501),
        ({"operation": "READ", "type": QUEUE}, None, 400),  # no name or identity
        ({"operation": "READ", "type": QUEUE, "name": "a", "identity": "b"}, None, 400),
        ({"operation": "READ", "type": QUEUE, "name": 5}, None, 400),
        ({"operation": "READ", "type": "org.example.gadget", "name": "q"}, None, 404),
        ({"operation": "QUERY", "entityType": "gadget"}, None, 404),
        ({"operation": "QUERY"}, a.AmqpValue([1, 2]), 400),  # a body that is no map
        ({"operation": "QUERY"}, b"raw bytes", 400),  # a data section
        ({"operation": "QUERY"}, {"attributeNames": "name"}, 400),
        ({"operation": "QUERY"}, {"attributeNames": [1, 2]}, 400),
        ({"operation": "QUERY"}, {"attributeNames": ["name", "name"]}, 400),
        ({"operation": "QUERY"}, {"attributeNames": [f"n{i}" for i in range(100_000)]}, 400),
        ({"operation": "QUERY", "offset": -1}, None, 400),
        ({"operation": "QUERY", "count": "ten"}, None, 400),
        ({"operation": "QUERY", "offset": True}, None, 400),
    ],
)
def test_hostile_requests_are_answered_never_a_crash(app: Any, body: Any, code: int) -> None:
    net = Net(BrokerConfig(max_message_size=4 * 1024 * 1024))
    publish(net.connect(), "q", b"1")
    manager = Manager(net.connect())
    response = manager.ask(app, body)
    assert status(response) == code
    assert response.application_properties is not None
    assert response.application_properties["statusDescription"]
    # ... and the node goes on answering.
    assert status(manager.ask({"operation": "READ", "type": QUEUE, "name": "q"})) == 200


def test_the_limit_on_attribute_names() -> None:
    net = Net()
    manager = Manager(net.connect())
    names = ["name", *(f"x{i}" for i in range(MAX_ATTRIBUTE_NAMES - 1))]
    rows = query(manager, names)
    assert all(row["name"] and row["x0"] is None for row in rows)  # unknown: null
    too_many = manager.ask({"operation": "QUERY"}, {"attributeNames": [*names, "one more"]})
    assert status(too_many) == 400


def test_discovery_operations() -> None:
    net = Net()
    manager = Manager(net.connect())
    types = value(manager.ask({"operation": "GET-TYPES"}))
    assert set(types) >= {QUEUE, "org.amqp-sansio.stream", "org.amqp-sansio.topic"}
    attributes = value(manager.ask({"operation": "GET-ATTRIBUTES", "entityType": "queue"}))
    assert "depth" in attributes[QUEUE] and "unsettled" in attributes[QUEUE]
    operations = value(manager.ask({"operation": "GET-OPERATIONS"}))
    assert "READ" in operations[QUEUE] and "QUERY" in operations["org.amqp.management"]


def test_requests_whose_response_can_go_nowhere_are_rejected() -> None:
    net = Net()
    manager = Manager(net.connect())
    no_reply = manager.send({"operation": "QUERY"}, reply_to=None)
    assert isinstance(no_reply.remote_state, a.Rejected)
    assert no_reply.remote_state.error is not None
    assert no_reply.remote_state.error.condition == "amqp:invalid-field"
    nowhere = manager.send({"operation": "QUERY"}, reply_to="no-such-node")
    assert isinstance(nowhere.remote_state, a.Rejected)
    assert nowhere.remote_state.error is not None
    assert nowhere.remote_state.error.condition == "amqp:not-found"
    assert "no-such-node" not in net.broker.nodes  # never made by a reply


def test_reply_to_a_named_queue_and_no_receiver_from_management() -> None:
    net = Net()
    admin = net.connect()
    replies = admin.receiver("replies", 10)
    requests = admin.sender("$management")
    d = admin.send(
        requests,
        a.Message(
            properties=a.Properties(message_id=1, reply_to="replies"),
            application_properties={"operation": "READ", "name": "replies"},
        ),
    )
    assert isinstance(d.remote_state, a.Accepted)
    (event,) = admin.received(replies)
    response = a.Message.decode(event.data)
    assert status(response) == 200 and value(response)["consumers"] == 1
    assert "$management" not in net.broker.nodes  # never made as a queue


def test_responses_on_a_receiver_from_management_azure_style() -> None:
    """Azure Service Bus's (and fe2o3-amqp-management's) convention: the responses come on a
    receiver from ``$management`` whose target address is the requests' reply-to."""
    net = Net()
    publish(net.connect(), "q", b"1", b"2")
    admin = net.connect()
    session = admin.begin()
    requests = admin.sender("$management")
    responses = session.attach_receiver(
        "mgmt-receiver",
        source=a.Source(address="$management"),
        target=a.Target(address="my-client-node"),
    )
    net.pump()
    assert responses.state is a.LinkState.ATTACHED
    responses.flow(1)
    net.pump()
    sent = [
        admin.send(
            requests,
            a.Message(
                properties=a.Properties(message_id=i, reply_to="my-client-node"),
                application_properties={"operation": "READ", "type": "queue", "name": "q"},
            ),
        )
        for i in range(2)
    ]
    assert all(isinstance(d.remote_state, a.Accepted) for d in sent)
    (first,) = admin.received(responses)  # one credit: one response; the other waits
    responses.settle(first.delivery, a.Accepted())
    responses.flow(1)
    net.pump()
    (second,) = admin.received(responses)
    decoded = [a.Message.decode(e.data) for e in (first, second)]
    assert [m.properties.correlation_id for m in decoded if m.properties] == [0, 1]
    assert all(status(m) == 200 and value(m)["depth"] == 2 for m in decoded)
    assert "my-client-node" not in net.broker.nodes
    rows = {r["name"] for r in query(Manager(admin))}
    assert "$management" not in rows and rows >= {"q"}
    # Without a target address there is nowhere to say to reply: refused.
    nameless = session.attach_receiver("r-nameless", source=a.Source(address="$management"))
    net.pump()
    assert nameless.state is not a.LinkState.ATTACHED


def test_management_obeys_the_users_file() -> None:
    users = Users.from_json(
        '{"users": {'
        '"admin": {"password": "pw", "send": ["$management", "public.*"], "receive": ["public.*"]},'
        '"guest": {"password": "pw", "send": ["orders"], "receive": ["orders"]}'
        "}}"
    )
    net = Net(BrokerConfig(users=users, allow_insecure_auth=True, queues=("orders", "public.a")))
    admin = net.connect(sasl=a.sasl.ClientCredentials(username="admin", password="pw"))
    manager = Manager(admin)
    names = [r["name"] for r in query(manager, ["name"], type="queue")]
    assert names == ["public.a"]  # what admin may use; not orders, not other dynamic nodes
    hidden = manager.ask({"operation": "READ", "name": "orders"})
    assert status(hidden) == 404
    guest = net.connect(sasl=a.sasl.ClientCredentials(username="guest", password="pw"))
    guest.receiver(None, 1, source=a.Source(dynamic=True))
    denied = guest.sender("$management")
    assert denied.state is not a.LinkState.ATTACHED


def test_a_presettled_request_is_answered_too() -> None:
    net = Net()
    manager = Manager(net.connect())
    manager.client.send(
        manager.requests,
        a.Message(
            properties=a.Properties(message_id="fire", reply_to=manager.reply_to),
            application_properties={"operation": "GET-MGMT-NODES"},
        ),
        settled=True,
    )
    (event,) = manager.client.received(manager.replies)
    response = a.Message.decode(event.data)
    assert status(response) == 200 and value(response) == []
    assert response.properties is not None and response.properties.correlation_id == "fire"


def test_with_users_the_reply_goes_only_where_the_user_may_send() -> None:
    users = Users.from_json(
        '{"users": {"ops": {"password": "pw", "send": ["$management"], "receive": ["inbox"]}}}'
    )
    net = Net(BrokerConfig(users=users, allow_insecure_auth=True, queues=("inbox",)))
    ops = net.connect(sasl=a.sasl.ClientCredentials(username="ops", password="pw"))
    manager = Manager(ops)  # its own dynamic node: no rule needed
    assert status(manager.ask({"operation": "QUERY"})) == 200
    denied = manager.send({"operation": "QUERY"}, reply_to="inbox")  # may not send there
    assert isinstance(denied.remote_state, a.Rejected)
    assert denied.remote_state.error is not None
    assert denied.remote_state.error.condition == "amqp:unauthorized-access"


class DiskLike:
    """A store other than the memory store: what the broker takes for a durable one (the
    SQLite store of ``--store`` lives with the adapters); it counts what it is told."""

    def __init__(self) -> None:
        self.kept: set[int] = set()

    def put(self, node: Any, message: Any) -> None:
        if node.persistent and message.durable:
            self.kept.add(message.seq)

    def remove(self, node: Any, message: Any) -> None:
        self.kept.discard(message.seq)

    def update(self, node: Any, message: Any) -> None:
        pass

    def flush(self) -> None:
        pass


def test_durable_means_the_queue_outlives_a_restart() -> None:
    store = DiskLike()
    net = Net(broker=Broker(BrokerConfig(), store=store))
    publish(net.connect(), "kept", b"1", b"2", durable=True)
    assert len(store.kept) == 2
    manager = Manager(net.connect())
    rows = {r["name"]: r for r in query(manager, ["name", "durable", "dynamic"])}
    assert rows["kept"]["durable"] is True  # a named queue, with a durable store
    assert rows[manager.reply_to] == {"name": manager.reply_to, "durable": False, "dynamic": True}
    memory = Net(broker=Broker(BrokerConfig(), store=MemoryStore()))
    publish(memory.connect(), "kept", b"1", durable=True)
    (row,) = [
        r for r in query(Manager(memory.connect()), ["name", "durable"]) if r["name"] == "kept"
    ]
    assert row["durable"] is False  # memory only
