// Preloaded (`node -r ./at_url.js PROGRAM`): amqplib's connect() called without a URL goes to
// the URL in AMQP_URL, so amqplib's own examples, written for amqp://localhost, run as they
// are against the broker under test (tests/interop/test_amqplib_examples.py).
'use strict';
const amqp = require('amqplib');
const connect = amqp.connect;
amqp.connect = (url, options) => connect(url === undefined ? process.env.AMQP_URL : url, options);
