'use strict';
// node rpc_server.js HOST PORT ADDRESS COUNT [--relay target|none] [--timeout MS]
//
// A request/response server as rhea users write one: it takes requests from ADDRESS and
// answers each through one anonymous sender (no address of its own: each reply goes where
// its `to` says, the request's reply_to), with the request's message id as correlation id
// and the body in upper case. --relay target (the default) opens that sender with
// `{target: {}}`, a target without an address, as rhea's own `connection.send()` does;
// --relay none opens it with `open_sender()`, no target at all. Prints `{"ready": true}`
// once both links are attached, then, after COUNT requests were answered (each reply
// accepted), the ids it answered.
const rhea = require('rhea');
const common = require('./common.js');

const {positional, options} = common.parse_args(process.argv.slice(2));
const [host, port, address, count_text] = positional;
const count = Number(count_text);

const container = rhea.create_container();
const answered = [];
let accepted = 0;
const result = () => ({answered, accepted});
common.fail_on_errors(container, result);
common.exit_after(Number(options.timeout || 20000), result);

const connection = container.connect(common.connect_options(host, port, options));
const relay = options.relay === 'none' ? connection.open_sender() : connection.open_sender({target: {}});
const requests = connection.open_receiver(address);
let opened = 0;
function link_open() {
    if (++opened === 2 && !common.is_finished()) process.stdout.write(JSON.stringify({ready: true}) + '\n');
}
relay.on('sendable', () => {});
relay.once('sender_open', link_open);
requests.once('receiver_open', link_open);
relay.on('accepted', (context) => {
    accepted++;
    if (accepted === count) context.connection.close();
});
requests.on('message', (context) => {
    const request = context.message;
    relay.send({to: request.reply_to, correlation_id: request.message_id, body: String(request.body).toUpperCase()});
    answered.push(request.message_id);
});
container.on('connection_close', () => common.print_result(result(), 0));
