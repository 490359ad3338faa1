'use strict';
// node rpc_client.js HOST PORT ADDRESS COUNT [--volatile] [--timeout MS]
//
// A request/response client as rhea users write one: a receiver with a dynamic source
// (`{source: {dynamic: true}}`: the peer makes a temporary node and names it in its attach),
// then COUNT requests to ADDRESS, each with that name as reply_to. Prints the node's address
// and the replies (correlation id and body) once all came. --volatile: RabbitMQ 4.2's direct
// reply-to instead (its page "Direct Reply-To"): the source also has the capability
// `rabbitmq:volatile-queue`, and the link asks for settled deliveries.
const rhea = require('rhea');
const common = require('./common.js');

const {positional, options} = common.parse_args(process.argv.slice(2));
const [host, port, address, count_text] = positional;
const count = Number(count_text);

const container = rhea.create_container();
const replies = [];
let reply_to = null;
let settled = 0;
const result = () => ({reply_to, replies, settled});
common.fail_on_errors(container, result);
common.exit_after(Number(options.timeout || 20000), result);

const connection = container.connect(common.connect_options(host, port, options));
const responses = options.volatile
    ? connection.open_receiver({
          source: {dynamic: true, capabilities: ['rabbitmq:volatile-queue']},
          snd_settle_mode: 1,
      })
    : connection.open_receiver({source: {dynamic: true}});
responses.on('receiver_open', (context) => {
    reply_to = context.receiver.source.address;
    const requests = context.connection.open_sender(address);
    let sent = 0;
    requests.on('sendable', () => {
        while (requests.sendable() && sent < count) {
            sent++;
            requests.send({message_id: `request-${sent}`, reply_to, body: `request ${sent}`});
        }
    });
});
responses.on('message', (context) => {
    replies.push({correlation_id: context.message.correlation_id, body: context.message.body});
    if (context.delivery.remote_settled) settled++;
    if (replies.length === count) context.connection.close();
});
container.on('connection_close', () => common.print_result(result(), 0));
