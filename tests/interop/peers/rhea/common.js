'use strict';
// What every program here shares: reading its command line, printing one JSON result, and
// ending with an error result when the peer refuses or the wait is over.
//
// Each program is written as a rhea user writes one (a container, `connect` with rhea's
// defaults, event handlers) and prints exactly one JSON object on standard output. Failures
// print {"error": ..., "condition": ..., "description": ...} and exit with status 3; a
// wait that ran out prints {"error": "timeout", ...} (with what had come so far) and exits 4.

const crypto = require('crypto');

// `node PROGRAM.js host port address count --flag --option value ...`: positionals in order,
// `--name value` options (`--name` alone when followed by another option or nothing: true).
function parse_args(argv) {
    const positional = [];
    const options = {};
    for (let i = 0; i < argv.length; i++) {
        const arg = argv[i];
        if (arg.startsWith('--')) {
            const name = arg.slice(2).replace(/-/g, '_');
            const next = argv[i + 1];
            if (next === undefined || next.startsWith('--')) {
                options[name] = true;
            } else {
                options[name] = next;
                i++;
            }
        } else {
            positional.push(arg);
        }
    }
    return {positional, options};
}

let finished = false;

function print_result(result, status) {
    if (finished) return;
    finished = true;
    process.stdout.write(JSON.stringify(result) + '\n', () => process.exit(status));
}

function is_finished() {
    return finished;
}

function error_of(context) {
    // The AMQP error a connection, session or link ended with, as rhea hands it over (an
    // event context; for 'protocol_error' and 'error', the Error itself).
    if (context instanceof Error) {
        return {condition: context.condition || context.name, description: context.message};
    }
    const candidates = [
        context.receiver && context.receiver.error,
        context.sender && context.sender.error,
        context.session && context.session.error,
        context.connection && context.connection.error,
        context.error,
    ];
    for (const e of candidates) {
        if (e) return {condition: e.condition || String(e), description: e.description || e.message || ''};
    }
    return {condition: null, description: ''};
}

// Report the first refusal the peer makes (closing the connection, ending the session,
// detaching a link with an error), a lost transport, or a SASL failure, and exit.
function fail_on_errors(container, extra) {
    const fail = (kind) => (context) => {
        const error = error_of(context);
        print_result(Object.assign({error: kind}, error, extra ? extra() : {}), 3);
    };
    container.on('connection_error', fail('connection_error'));
    container.on('session_error', fail('session_error'));
    container.on('receiver_error', fail('receiver_error'));
    container.on('sender_error', fail('sender_error'));
    container.on('protocol_error', fail('protocol_error'));
    container.on('error', fail('error'));
    container.on('disconnected', (context) => {
        if (finished) return;
        const error = context.error ? {condition: context.error.code || String(context.error), description: context.error.message || ''} : {};
        print_result(Object.assign({error: 'disconnected'}, error, extra ? extra() : {}), 3);
    });
}

function exit_after(milliseconds, extra) {
    const timer = setTimeout(() => print_result(Object.assign({error: 'timeout', after_ms: milliseconds}, extra ? extra() : {}), 4), milliseconds);
    timer.unref();
}

// A body as JSON can carry it: text as it is, binary (an amqp-value binary or data
// sections) by its length and SHA-256, so that a 10 MiB body is compared without printing it.
function describe_body(body) {
    if (typeof body === 'string' || typeof body === 'number' || body === null || body === undefined) {
        return body === undefined ? null : body;
    }
    let bytes = null;
    if (Buffer.isBuffer(body)) {
        bytes = body;
    } else if (body && body.typecode === 0x75) {
        bytes = body.multiple ? Buffer.concat(body.content) : body.content;
    }
    if (bytes) {
        return {length: bytes.length, sha256: crypto.createHash('sha256').update(bytes).digest('hex')};
    }
    return JSON.parse(JSON.stringify(body));
}

// The bytes of a binary body of `size` bytes, the same in every program (and in the Python
// tests): byte i is (i * 31 + 7) mod 251.
function pattern_bytes(size) {
    const bytes = Buffer.alloc(size);
    for (let i = 0; i < size; i++) bytes[i] = (i * 31 + 7) % 251;
    return bytes;
}

// The connect options a program's command line asks for; nothing is set that the user did
// not ask for, so rhea's defaults apply otherwise.
function connect_options(host, port, options) {
    const rhea = require('rhea');
    const connect = {host, port: Number(port)};
    if (options.username !== undefined) connect.username = options.username;
    if (options.password !== undefined) connect.password = options.password;
    if (options.sasl_anonymous) {
        const mechanisms = rhea.sasl.client_mechanisms();
        mechanisms.enable_anonymous();
        connect.sasl_mechanisms = mechanisms;
    }
    return connect;
}

module.exports = {parse_args, print_result, is_finished, fail_on_errors, exit_after, describe_body, pattern_bytes, connect_options};
