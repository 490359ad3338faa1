'use strict';
// node idle.js HOST PORT ADDRESS --idle-ms MS [--timeout MS]
//
// Opens a connection and a receiver from ADDRESS with rhea's defaults, stays idle for MS
// milliseconds (rhea sends empty frames at the pace the peer's idle-time-out asks, core
// spec 2.4.5), then sends one message to ADDRESS and prints what the receiver got once the
// connection is closed. A connection the peer closes meanwhile fails (status 3).
const rhea = require('rhea');
const common = require('./common.js');

const {positional, options} = common.parse_args(process.argv.slice(2));
const [host, port, address] = positional;
const idle = Number(options.idle_ms || 5000);

const container = rhea.create_container();
const received = [];
const result = () => ({received, idle_ms: idle});
common.fail_on_errors(container, result);
common.exit_after(Number(options.timeout || 20000), result);

container.on('message', (context) => {
    received.push(common.describe_body(context.message.body));
    context.connection.close();
});
container.on('connection_close', () => common.print_result(result(), 0));

const connection = container.connect(common.connect_options(host, port, options));
connection.open_receiver(address);
setTimeout(() => {
    const sender = connection.open_sender(address);
    sender.on('sendable', () => {
        if (sender.sent === undefined) {
            sender.sent = true;
            sender.send({body: 'after a while'});
        }
    });
}, idle);
