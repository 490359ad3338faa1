'use strict';
// node ws_client.js send|receive URL ADDRESS COUNT [--ca PEM] [--timeout MS]
//
// rhea as a WebSocket client (the AMQP WebSocket binding), as rhea's README has it:
// `container.websocket_connect(require('ws'))` makes a factory, called with the ws:// URL
// and the subprotocols to offer (here `amqp`, the binding's, CS01 section 2.1), and its
// result is the `connection_details` of `container.connect`. Otherwise rhea's defaults.
// For a wss:// URL, `--ca PEM` is the CA the `ws` package (Node's TLS) trusts, its `ca`
// option; Node checks the certificate and the host name, as it does by default.
// `send` sends COUNT messages (ids m-1 ..., bodies "message 1" ...) to ADDRESS and prints
// the ids and outcomes; `receive` receives COUNT messages from ADDRESS and prints them.
const fs = require('fs');
const rhea = require('rhea');
const WebSocket = require('ws');
const common = require('./common.js');

const {positional, options} = common.parse_args(process.argv.slice(2));
const [mode, url, address, count_text] = positional;
const count = Number(count_text);

const container = rhea.create_container();
const sent = [];
const received = [];
const outcomes = {accepted: 0, rejected: 0, released: 0, modified: 0};
const result = () => (mode === 'send' ? {sent, outcomes} : {received});
common.fail_on_errors(container, result);
common.exit_after(Number(options.timeout || 20000), result);

container.on('sendable', (context) => {
    while (context.sender.sendable() && sent.length < count) {
        const n = sent.length + 1;
        context.sender.send({message_id: `m-${n}`, body: `message ${n}`});
        sent.push(`m-${n}`);
    }
});
for (const outcome of Object.keys(outcomes)) {
    container.on(outcome, (context) => {
        outcomes[outcome]++;
        if (outcomes.accepted + outcomes.rejected + outcomes.released + outcomes.modified === count) {
            context.connection.close();
        }
    });
}
container.on('message', (context) => {
    received.push({id: context.message.message_id, body: common.describe_body(context.message.body)});
    if (received.length === count) context.receiver.close();
});
container.on('receiver_close', (context) => context.connection.close());
container.on('connection_close', () => common.print_result(result(), 0));

const ws = container.websocket_connect(WebSocket);
const tls = options.ca ? {ca: fs.readFileSync(options.ca)} : {};
const connection = container.connect({connection_details: ws(url, ['amqp'], tls), reconnect: false});
if (mode === 'send') connection.open_sender(address);
else connection.open_receiver(address);
