'use strict';
// EchoMQ 2.0 for Node.js, as a library. See README.md.
const { Bus } = require('./lib/bus');
const { Consumer } = require('./lib/consumer');
const { Bundle, VERSION } = require('./lib/bundle');
const errors = require('./lib/errors');
const ids = require('./lib/ids');
const keys = require('./lib/keys');
const { slot, crc16 } = require('./lib/slot');

module.exports = { Bus, Consumer, Bundle, VERSION, errors, EmqError: errors.EmqError, ids, keys, slot, crc16 };
