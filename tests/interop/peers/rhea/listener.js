'use strict';
// node listener.js PORT [--bare] [--timeout MS]
//
// A rhea program serving AMQP itself with `container.listen({port})` and rhea's listener
// defaults (SASL ANONYMOUS offered, the bare AMQP header accepted too), as a minimal
// broker: a peer's sender delivers into an in-memory queue named by its target address, a
// peer's receiver is served from the queue named by its source address, as far as its
// credit goes. Each message is accepted by rhea's defaults on receipt, and taken off the
// queue when sent (rhea's defaults: unsettled until the peer settles). Prints
// {"port": N} once it listens (PORT 0: a free port), then runs until SIGTERM, when it prints
// what it holds and what went through it. --bare leaves out what a rhea server program must
// do to accept a link: setting the local terminus (rhea answers an attach with the terminus
// the program set, none by default).
const rhea = require('rhea');
const common = require('./common.js');

const {positional, options} = common.parse_args(process.argv.slice(2));
const port = Number(positional[0] || 0);

const container = rhea.create_container({id: 'rhea-listener'});
const queues = new Map();
const counts = {received: 0, sent: 0, accepted_by_peer: 0, connections: 0};
const waiting = new Map();

function queue(address) {
    if (!queues.has(address)) queues.set(address, []);
    return queues.get(address);
}
function serve(sender) {
    const address = sender.source && sender.source.address;
    if (!address) return;
    const messages = queue(address);
    while (sender.sendable() && messages.length) {
        sender.send(messages.shift());
        counts.sent++;
    }
}

container.on('connection_open', () => counts.connections++);
container.on('sender_open', (context) => {
    // The peer's receiver: answer with its source, and serve it from that queue.
    if (!options.bare) context.sender.set_source(context.sender.source);
    const address = context.sender.source && context.sender.source.address;
    if (!waiting.has(address)) waiting.set(address, new Set());
    waiting.get(address).add(context.sender);
});
container.on('receiver_open', (context) => {
    if (!options.bare) context.receiver.set_target(context.receiver.target);
});
container.on('sendable', (context) => serve(context.sender));
container.on('accepted', () => counts.accepted_by_peer++);
container.on('message', (context) => {
    const target = context.receiver.target;
    const address = (target && target.address) || context.message.to;
    queue(address).push(context.message);
    counts.received++;
    for (const sender of waiting.get(address) || []) serve(sender);
});
for (const event of ['sender_close', 'receiver_close']) {
    container.on(event, (context) => {
        const link = context.sender || context.receiver;
        for (const senders of waiting.values()) senders.delete(link);
    });
}
container.on('disconnected', (context) => {
    for (const senders of waiting.values()) {
        for (const sender of senders) if (sender.connection === context.connection) senders.delete(sender);
    }
});
container.on('error', (error) => process.stderr.write(`listener: ${error}\n`));

const server = container.listen({port, host: '127.0.0.1'});
server.on('listening', () => process.stdout.write(JSON.stringify({port: server.address().port}) + '\n'));
process.on('SIGTERM', () => {
    const held = {};
    for (const [address, messages] of queues) held[address] = messages.length;
    process.stdout.write(JSON.stringify({counts, held}) + '\n', () => process.exit(0));
});
if (options.timeout) setTimeout(() => process.exit(4), Number(options.timeout)).unref();
