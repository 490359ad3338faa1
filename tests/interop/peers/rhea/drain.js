'use strict';
// node drain.js HOST PORT ADDRESS CREDIT [--timeout MS]
//
// A receiver without a credit window (credit_window 0, rhea's way of managing credit by
// hand) asks for CREDIT messages in drain mode (`receiver.drain = true;
// receiver.add_credit(CREDIT)`) and waits for rhea's `receiver_drained` event: the sender
// has sent what it had, up to CREDIT, and given the rest of the credit back. Prints the
// messages that came before it and the credit and delivery-count the drained flow left.
const rhea = require('rhea');
const common = require('./common.js');

const {positional, options} = common.parse_args(process.argv.slice(2));
const [host, port, address, credit_text] = positional;
const credit = Number(credit_text);

const container = rhea.create_container();
const received = [];
let drained = null;
const result = () => ({received, drained});
common.fail_on_errors(container, result);
common.exit_after(Number(options.timeout || 20000), result);

container.on('receiver_open', (context) => {
    context.receiver.drain = true;
    context.receiver.add_credit(credit);
});
container.on('message', (context) => {
    received.push({id: context.message.message_id, body: common.describe_body(context.message.body)});
});
container.on('receiver_drained', (context) => {
    drained = {credit: context.receiver.credit, delivery_count: context.receiver.delivery_count};
    context.receiver.close();
});
container.on('receiver_close', (context) => context.connection.close());
container.on('connection_close', () => common.print_result(result(), 0));

const connection = container.connect(common.connect_options(host, port, options));
connection.open_receiver({source: address, credit_window: 0});
