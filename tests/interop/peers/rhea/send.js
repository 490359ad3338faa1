'use strict';
// node send.js HOST PORT ADDRESS COUNT [--prefix ID] [--size BYTES] [--colours red,blue]
//     [--durable] [--username U --password P] [--sasl-anonymous]
//     [--timeout MS]
//
// Sends COUNT messages to ADDRESS with rhea's defaults (at-least-once: unsettled, settled
// by rhea once the peer settles), message ids PREFIX-1 ... PREFIX-COUNT, bodies "message 1",
// ... or, with --size, one data section of that many bytes (common.pattern_bytes); with
// --colours, application property `colour` cycles through the list. Prints the ids sent and
// the outcomes once every message has one and the connection is closed.
const rhea = require('rhea');
const common = require('./common.js');

const {positional, options} = common.parse_args(process.argv.slice(2));
const [host, port, address, count_text] = positional;
const count = Number(count_text);
const prefix = options.prefix || 'm';
const colours = options.colours ? options.colours.split(',') : null;
const body = options.size !== undefined ? rhea.message.data_section(common.pattern_bytes(Number(options.size))) : null;

const container = rhea.create_container();
const sent = [];
const outcomes = {accepted: 0, rejected: 0, released: 0, modified: 0};
const result = () => ({sent, outcomes});
common.fail_on_errors(container, result);
common.exit_after(Number(options.timeout || 20000), result);

function settled_all() {
    return outcomes.accepted + outcomes.rejected + outcomes.released + outcomes.modified === count;
}

container.on('sendable', (context) => {
    while (context.sender.sendable() && sent.length < count) {
        const n = sent.length + 1;
        const message = {message_id: `${prefix}-${n}`, body: body || `message ${n}`};
        if (colours) message.application_properties = {colour: colours[(n - 1) % colours.length], n};
        if (options.durable) message.durable = true;
        context.sender.send(message);
        sent.push(message.message_id);
    }
});
for (const outcome of Object.keys(outcomes)) {
    container.on(outcome, (context) => {
        outcomes[outcome]++;
        if (settled_all()) context.connection.close();
    });
}
container.on('connection_close', () => common.print_result(result(), 0));

const connection = container.connect(common.connect_options(host, port, options));
connection.open_sender(address);
if (count === 0) connection.close();
