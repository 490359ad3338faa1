'use strict';
// node receive.js HOST PORT ADDRESS COUNT [--copy] [--selector EXPR] [--durable]
//     [--name LINK] [--container-id ID] [--detach] [--idle MS]
//     [--username U --password P] [--sasl-anonymous] [--timeout MS] [--max-message-size N]
//
// Receives from ADDRESS with rhea's defaults (credit window, auto-accept) until COUNT
// messages came, or until nothing came for --idle milliseconds (then it prints what came:
// "waited for more and none came" is a result, not an error). --copy browses
// (distribution-mode copy), --selector filters with rhea.filter.selector, --durable makes the
// source a durable subscription (durable 2, expiry-policy never) under the link name --name
// and the container id --container-id. At the end the link is closed, or with --detach only
// detached (kept for a later attach), and then the connection is closed.
const rhea = require('rhea');
const common = require('./common.js');

const {positional, options} = common.parse_args(process.argv.slice(2));
const [host, port, address, count_text] = positional;
const count = Number(count_text);
const idle = options.idle !== undefined ? Number(options.idle) : null;

const container = rhea.create_container(options.container_id ? {id: options.container_id} : {});
const received = [];
let remote_source = null;
const result = () => ({received, source: remote_source});
common.fail_on_errors(container, result);
common.exit_after(Number(options.timeout || 20000), result);

let idle_timer = null;
let ending = false;
function finish(receiver) {
    if (ending) return;
    ending = true;
    if (idle_timer) clearTimeout(idle_timer);
    if (options.detach) receiver.detach();
    else receiver.close();
}
function wait_idle(receiver) {
    if (idle === null) return;
    if (idle_timer) clearTimeout(idle_timer);
    idle_timer = setTimeout(() => finish(receiver), idle);
}

container.on('receiver_open', (context) => {
    const source = context.receiver.source;
    remote_source = source ? {address: source.address, durable: source.durable, expiry_policy: source.expiry_policy, distribution_mode: source.distribution_mode || null, filter: source.filter ? Object.keys(source.filter) : null} : null;
    if (count === 0) finish(context.receiver);
    else wait_idle(context.receiver);
});
container.on('message', (context) => {
    const message = context.message;
    const entry = {id: message.message_id, body: common.describe_body(message.body)};
    if (message.application_properties && message.application_properties.colour !== undefined) {
        entry.colour = message.application_properties.colour;
    }
    received.push(entry);
    if (received.length === count) finish(context.receiver);
    else wait_idle(context.receiver);
});
container.on('receiver_close', (context) => context.connection.close());
container.on('connection_close', () => common.print_result(result(), 0));

const connection = container.connect(common.connect_options(host, port, options));
const source = {address};
if (options.copy) source.distribution_mode = 'copy';
if (options.selector) source.filter = rhea.filter.selector(options.selector);
if (options.durable) {
    source.durable = 2;
    source.expiry_policy = 'never';
}
const receiver_options = {source};
if (options.name) receiver_options.name = options.name;
if (options.max_message_size) receiver_options.max_message_size = Number(options.max_message_size);
connection.open_receiver(receiver_options);
