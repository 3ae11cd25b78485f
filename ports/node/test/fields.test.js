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

// Part B [B-281]: a payload of megabytes is held to the base64 alphabet like any other; the
// four-character-group regular expression this check once used overflowed V8's stack at a few
// MiB and answered INTERNAL.
test('a payload of megabytes is checked, not a stack overflow', () => {
  const big = Buffer.alloc(8 << 20, 0xa5).toString('base64');
  assert.equal(refusal('enqueue', { queue: 'orders', payload_b64: big }), 'accepted');
  assert.equal(refusal('enqueue', { queue: 'orders', payload_b64: `${big.slice(0, 1000)}-${big.slice(1001)}` }), 'EMQARG');
  for (const bad of ['QQ=', 'Q===', 'QU=I', 'QQ==QQ==', 'a-b_', 'QUJD\nQUJD']) {
    assert.equal(refusal('enqueue', { queue: 'orders', payload_b64: bad }), 'EMQARG', bad);
  }
});
