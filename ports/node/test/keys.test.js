'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const keys = require('../lib/keys');
const { crc16, slot, hashTag } = require('../lib/slot');

const expectType = (type) => (err) => err.type === type;

test('CRC16/XMODEM and the slot vectors', () => {
  assert.equal(crc16('123456789'), 12739);
  assert.equal(slot('{orders}'), 105);
  assert.equal(slot('{fills}'), 4165);
  assert.equal(slot('{payments}'), 8507);
  assert.equal(slot('emq:{orders}:pending'), 105);
});

test('hash tags follow the cluster rule', () => {
  assert.equal(hashTag('a{b}c').toString(), 'b');
  assert.equal(hashTag('a{}c{d}').toString(), 'a{}c{d}');
  assert.equal(hashTag('nobrace').toString(), 'nobrace');
  assert.equal(hashTag('{a}{b}').toString(), 'a');
});

test('every key of one queue answers one slot', () => {
  const q = new keys.Queue('orders');
  const all = keys.QUEUE_TYPES.map((t) => q.build(t));
  all.push(q.job('JOB0KHTOWnGLuC'), q.lane('eu-west.1'));
  for (const k of all) {
    assert.equal(slot(k), 105, k);
    assert.equal(keys.parseKey(k).queue, 'orders');
  }
});

test('the builder spells the grammar', () => {
  const q = new keys.Queue('orders');
  assert.equal(q.build('pending'), 'emq:{orders}:pending');
  assert.equal(q.build('job', { id: 'JOB0KHTOWnGLuC' }), 'emq:{orders}:job:JOB0KHTOWnGLuC');
  assert.equal(q.build('lane', { lane: 'g_1' }), 'emq:{orders}:lane:g_1');
  assert.equal(keys.minter(1023), '{emq}:minter:1023');
});

test('bad names are EMQKEY, wrong brands EMQKIND', () => {
  for (const bad of ['', 'Orders', 'a b', 'x'.repeat(65), 'ü', 'a{b}', 'a:b', undefined, 7]) {
    assert.throws(() => new keys.Queue(bad), expectType('EMQKEY'), String(bad));
  }
  assert.doesNotThrow(() => new keys.Queue('x'.repeat(64)));
  const q = new keys.Queue('orders');
  assert.throws(() => q.lane('Lane'), expectType('EMQKEY'));
  assert.throws(() => q.job('ORD0KHTOWnGLuC'), expectType('EMQKIND'));
  assert.throws(() => q.job('JOB0KHTOWnGLu'), expectType('EMQKEY'));
  assert.throws(() => q.build('nosuch'), expectType('EMQKEY'));
  assert.throws(() => keys.minter(1024), expectType('EMQKEY'));
});

test('the parse is total', () => {
  assert.deepEqual(keys.parseKey('{emq}:bundle'), { type: 'bundle' });
  assert.deepEqual(keys.parseKey('{emq}:minter:7'), { type: 'minter', worker: 7 });
  for (const bad of ['emq:{orders}:nope', 'emq:orders:pending', '{emq}:minter:1024', '{emq}:minter:07',
    'emq:{Orders}:pending', 'emq:{orders}:job:ORD0KHTOWnGLuC']) {
    assert.throws(() => keys.parseKey(bad), (e) => e.type === 'EMQKEY' || e.type === 'EMQKIND', bad);
  }
});
