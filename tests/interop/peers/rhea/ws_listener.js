'use strict';
// node ws_listener.js [--send ADDRESS --count N] [--timeout MS]
//
// rhea serving AMQP over WebSocket as rhea's README has it: a `ws` server
// (`new WebSocket.Server({port: 0})`) whose connections are each handed to
// `container.websocket_accept(socket)`. The `ws` server chooses the first subprotocol the
// client offers (ws's default), so a client offering `amqp` (CS01 section 2.1) gets it.
// It takes every link (answering with the peer's terminus), accepts every message it
// receives (rhea's default) and, with --send, sends N messages (ids s-1 ..., bodies
// "message 1" ...) to a peer's receiver on ADDRESS. Prints {"port": N} once it listens,
// then one line per message received ({"received": {"id", "body", "address"}}), and at
// SIGTERM its counts.
const rhea = require('rhea');
const WebSocket = require('ws');
const common = require('./common.js');

const {options} = common.parse_args(process.argv.slice(2));
const to_send = options.send ? Number(options.count || 0) : 0;

const container = rhea.create_container({id: 'rhea-ws-listener'});
const counts = {connections: 0, received: 0, sent: 0, accepted_by_peer: 0};
let next = 0;

container.on('connection_open', () => counts.connections++);
container.on('receiver_open', (context) => context.receiver.set_target(context.receiver.target));
container.on('sender_open', (context) => context.sender.set_source(context.sender.source));
container.on('message', (context) => {
    counts.received++;
    const target = context.receiver.target;
    const entry = {id: context.message.message_id, body: common.describe_body(context.message.body), address: target && target.address};
    process.stdout.write(JSON.stringify({received: entry}) + '\n');
});
container.on('sendable', (context) => {
    const source = context.sender.source;
    if (!source || source.address !== options.send) return;
    while (context.sender.sendable() && next < to_send) {
        next++;
        context.sender.send({message_id: `s-${next}`, body: `message ${next}`});
        counts.sent++;
    }
});
container.on('accepted', () => counts.accepted_by_peer++);
container.on('error', (error) => process.stderr.write(`ws_listener: ${error}\n`));

const server = new WebSocket.Server({port: 0, host: '127.0.0.1'});
server.on('connection', (socket) => container.websocket_accept(socket));
server.on('listening', () => process.stdout.write(JSON.stringify({port: server.address().port}) + '\n'));
process.on('SIGTERM', () => {
    process.stdout.write(JSON.stringify({counts}) + '\n', () => process.exit(0));
});
if (options.timeout) setTimeout(() => process.exit(4), Number(options.timeout)).unref();
