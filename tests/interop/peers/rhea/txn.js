'use strict';
// node txn.js HOST PORT ADDRESS COUNT --discharge commit|rollback [--timeout MS]
//
// rhea 3 has no transaction API: no coordinator, declare or discharge anywhere in it, and
// `sender.send()` cannot put a transactional-state on a transfer, so messages cannot be
// *posted* in a transaction. What a rhea program can do is drive the coordinator link itself
// with rhea's type constructors (core spec part 4), as this one does:
//
// 1. a sender whose target is a coordinator (4.5.1, descriptor 0x30), set on the link
//    before its attach goes out (rhea's link options only make `target` terminus);
// 2. a declare (4.5.2, 0x31) as an amqp-value body; the outcome is declared (4.5.4, 0x33)
//    with the transaction id. rhea cannot put a described value in a body (its message
//    encoder replaces the value's descriptor with the section's, 0x77), so the control
//    messages are encoded here and sent with `sender.send(bytes, tag, format)`, rhea's way of
//    sending a message it does not encode;
// 3. COUNT messages taken from ADDRESS and accepted *in* the transaction: the disposition's
//    state is a transactional-state (4.5.5, 0x34) naming the id and the accepted outcome;
// 4. a discharge (4.5.3, 0x32) with fail false (commit) or true (rollback).
//
// Prints the transaction id (hex), the ids it retired and the discharge's outcome.
const rhea = require('rhea');
const common = require('./common.js');

const {positional, options} = common.parse_args(process.argv.slice(2));
const [host, port, address, count_text] = positional;
const count = Number(count_text);
const fail = options.discharge === 'rollback';
const types = rhea.types;

const container = rhea.create_container();
let txn_id = null;
const retired = [];
let discharge = null;
const result = () => ({txn_id: txn_id && txn_id.toString('hex'), retired, discharge});
common.fail_on_errors(container, result);
common.exit_after(Number(options.timeout || 20000), result);

// An amqp-value section (core spec 3.2.7) holding `value`, encoded with rhea's Writer.
function value_section(value) {
    const writer = new types.Writer();
    writer.write(value);
    return Buffer.concat([Buffer.from([0x00, 0x53, 0x77]), writer.toBuffer()]);
}

const connection = container.connect(common.connect_options(host, port, options));
const coordinator = connection.open_sender({name: 'txn-controller'});
coordinator.local.attach.target = types.wrap_described([], 0x30);

let declared_sent = false;
coordinator.on('sendable', () => {
    if (declared_sent) return;
    declared_sent = true;
    coordinator.send(value_section(types.wrap_described([], 0x31)), undefined, 0);
});

let state = 'declaring';
coordinator.on('settled', (context) => {
    const outcome = context.delivery.remote_state;
    const descriptor = outcome && outcome.descriptor ? Number(outcome.descriptor.value) : null;
    if (state === 'declaring') {
        if (descriptor !== 0x33) {
            common.print_result(Object.assign({error: 'declare refused', outcome: JSON.parse(JSON.stringify(outcome || null))}, result()), 3);
            return;
        }
        txn_id = outcome.value[0].value;
        state = 'working';
        take_messages(context.connection);
    } else if (state === 'discharging') {
        // rhea knows the outcomes of part 3 (accepted, rejected, ...) by name.
        discharge = outcome && outcome.constructor.composite_type ? outcome.constructor.composite_type : String(descriptor);
        if (outcome && outcome.error) discharge += ': ' + outcome.error.condition;
        context.connection.close();
    }
});

function take_messages(connection) {
    const receiver = connection.open_receiver({source: address, autoaccept: false, credit_window: 0});
    receiver.on('receiver_open', () => receiver.add_credit(count));
    receiver.on('message', (context) => {
        const accepted = types.wrap_described([], 0x24);
        context.delivery.update(true, types.wrap_described([types.wrap_binary(txn_id), accepted], 0x34));
        retired.push(context.message.message_id);
        if (retired.length === count) {
            state = 'discharging';
            // rhea writes a session's transfers before its dispositions: sent now, the
            // discharge would overtake the transactional accepts it is meant to follow.
            setImmediate(() => coordinator.send(value_section(types.wrap_described([types.wrap_binary(txn_id), fail], 0x32)), undefined, 0));
        }
    });
}
container.on('connection_close', () => common.print_result(result(), 0));
