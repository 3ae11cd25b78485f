'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const { check } = require('../lib/fields');

const refusal = (op, r) => {
  try {
    check(op, r);
    return 'accepted';
  } catch (err) {
    return err.type;
  }
};

// Part B "Order" [B-100]: a request whose shape is wrong is EMQARG whatever else is wrong with
// it, an empty name included, wherever the two stand among the fields.
test('shape faults come before an empty name', () => {
  assert.equal(refusal('enqueue', { queue: '', payload_b64: 'not base64!' }), 'EMQARG');
  assert.equal(refusal('complete', { queue: '', id: 'JOB00000000001', token: '7' }), 'EMQARG');
  assert.equal(refusal('enqueue', { queue: '', payload_b64: 'aGk=' }), 'EMQKEY');
  assert.equal(refusal('lane_pause', { queue: 'q', lane: '' }), 'EMQKEY');
  assert.equal(refusal('enqueue', { queue: 'q', payload_b64: 'aGk=' }), 'accepted');
});
