'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const resp = require('../lib/resp');
const errors = require('../lib/errors');
const { checkServer } = require('../lib/session');

test('encode spells arrays of bulk strings', () => {
  assert.equal(resp.encode(['SET', 'k', Buffer.from([0, 1]), 7]).toString('latin1'),
    '*4\r\n$3\r\nSET\r\n$1\r\nk\r\n$2\r\n\x00\x01\r\n$1\r\n7\r\n');
  assert.throws(() => resp.encode([1.5]), TypeError);
});

const stream = Buffer.from(
  '+OK\r\n-EMQSTALE token 3 is not live\r\n:42\r\n$5\r\nhe\r\nl\r\n$-1\r\n*-1\r\n*0\r\n' +
  '*3\r\n$2\r\nid\r\n*2\r\n:1\r\n$0\r\n\r\n:-9\r\n:9223372036854775807\r\n', 'latin1');

function expected() {
  return ['OK', 'EMQSTALE token 3 is not live', 42, 'he\r\nl', null, null, [],
    ['id', [1, ''], -9], 9223372036854775807n];
}

function norm(v) {
  if (Buffer.isBuffer(v)) return v.toString('latin1');
  if (v instanceof resp.ReplyError) return v.line;
  if (Array.isArray(v)) return v.map(norm);
  return v;
}

test('the reader gives the same replies whatever the chunking', () => {
  for (let size = 1; size <= stream.length; size++) {
    const r = new resp.Reader();
    const out = [];
    for (let i = 0; i < stream.length; i += size) out.push(...r.feed(stream.subarray(i, i + size)));
    assert.deepEqual(out.map(norm), expected(), `chunk size ${size}`);
  }
});

test('the reader refuses malformed input with a typed error', () => {
  for (const bad of ['?x\r\n', '$abc\r\n', ':1.5\r\n', '$2\r\nabcd\r\n', '*x\r\n']) {
    assert.throws(() => new resp.Reader().feed(Buffer.from(bad)), resp.ProtocolError, bad);
  }
});

test('server errors are typed by their first word', () => {
  const e = errors.fromServer('EMQSTALE token 2 is not the live token');
  assert.ok(e instanceof errors.EmqError);
  assert.equal(e.type, 'EMQSTALE');
  const n = errors.fromServer('NOSCRIPT No matching script.');
  assert.ok(n instanceof errors.ServerError);
  assert.equal(n.code, 'NOSCRIPT');
});

const hello = (server, version, mode) => ['server', server, 'version', version, 'proto', 2, 'mode', mode].map(
  (v) => (typeof v === 'string' ? Buffer.from(v) : v));

test('A12: only valkey >= 8.1.0 standalone passes', () => {
  assert.equal(checkServer(hello('valkey', '8.1.1', 'standalone')).version, '8.1.1');
  assert.doesNotThrow(() => checkServer(hello('valkey', '10.0.0', 'standalone')));
  for (const [s, v, m] of [['redis', '7.0.15', 'standalone'], ['valkey', '8.0.1', 'standalone'],
    ['valkey', '8.1.1', 'cluster'], ['valkey', 'x', 'standalone']]) {
    assert.throws(() => checkServer(hello(s, v, m)), (e) => e.type === 'EMQSERVER', `${s} ${v} ${m}`);
  }
  const logged = [];
  checkServer(hello('redis', '7.0.15', 'standalone'), { admitEngine: true, log: (l) => logged.push(l) });
  assert.equal(logged.length, 1);
});
