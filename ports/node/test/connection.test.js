'use strict';
// The connector against a scripted in-process server on loopback: pipelining order, typed error
// replies, a dropped connection failing everything in flight, and the EVALSHA-first path.
const test = require('node:test');
const assert = require('node:assert/strict');
const net = require('node:net');
const { Connection, REPLY_GRACE_MS } = require('../lib/connection');
const { Session } = require('../lib/session');
const { Bundle } = require('../lib/bundle');
const resp = require('../lib/resp');
const errors = require('../lib/errors');

// serve answers each command with reply(args), written in tiny chunks to exercise the reader.
async function serve(reply) {
  const seen = [];
  const server = net.createServer((sock) => {
    const reader = new ArgReader();
    sock.on('data', (chunk) => {
      for (const args of reader.feed(chunk)) {
        seen.push(args);
        const out = reply(args, sock);
        if (out === undefined) continue;
        for (let i = 0; i < out.length; i += 3) sock.write(out.subarray(i, i + 3));
      }
    });
    sock.on('error', () => {});
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return { address: `127.0.0.1:${server.address().port}`, seen, close: () => server.close() };
}

// ArgReader decodes the client's commands with the same reader (they are arrays of bulks).
class ArgReader {
  #r = new resp.Reader();
  feed(chunk) {
    return this.#r.feed(chunk).map((a) => a.map((b) => b.toString('utf8')));
  }
}

const bulk = (s) => Buffer.from(`$${Buffer.byteLength(s)}\r\n${s}\r\n`);

test('pipelined replies settle in order, errors typed by first word', async () => {
  const srv = await serve((args) => {
    if (args[0] === 'STALE') return Buffer.from('-EMQSTALE JOB1 token 2 but attempts 1\r\n');
    if (args[0] === 'WEIRD') return Buffer.from('-WRONGTYPE nope\r\n');
    return bulk(args.slice(1).join(','));
  });
  const c = await Connection.open(srv.address);
  const ps = [c.send('ECHO', 'a'), c.send('STALE'), c.send('ECHO', 'b', 'c'), c.send('WEIRD'), c.send('ECHO', Buffer.from([0xff]))];
  const rs = await Promise.allSettled(ps);
  assert.equal(rs[0].value.toString(), 'a');
  assert.ok(rs[1].reason instanceof errors.EmqError);
  assert.equal(rs[1].reason.type, 'EMQSTALE');
  assert.equal(rs[2].value.toString(), 'b,c');
  assert.equal(rs[3].reason.code, 'WRONGTYPE');
  assert.equal(rs[4].status, 'fulfilled');
  const batch = await c.pipeline([['ECHO', 'x'], ['STALE'], ['ECHO', 'y']]);
  assert.equal(batch[0].toString(), 'x');
  assert.equal(batch[1].type, 'EMQSTALE');
  assert.equal(batch[2].toString(), 'y');
  c.close();
  srv.close();
});

test('a dropped connection fails every command in flight', async () => {
  const srv = await serve((args, sock) => {
    if (args[0] === 'DIE') sock.destroy();
    return undefined;
  });
  const c = await Connection.open(srv.address);
  const a = c.send('HANG');
  const b = c.send('DIE');
  await assert.rejects(a, errors.ConnectionError);
  await assert.rejects(b, errors.ConnectionError);
  await assert.rejects(c.send('AFTER'), errors.ConnectionError);
  srv.close();
});

const HELLO = Buffer.from('*6\r\n$6\r\nserver\r\n$6\r\nvalkey\r\n$7\r\nversion\r\n$5\r\n8.1.1\r\n$4\r\nmode\r\n$10\r\nstandalone\r\n');

function scriptServer({ loadAnswer }) {
  const loaded = new Set();
  return serve((args) => {
    switch (args[0]) {
      case 'HELLO': return HELLO;
      case 'SCRIPT': {
        const sha = loadAnswer(args[2]);
        loaded.add(sha);
        return bulk(sha);
      }
      case 'EVALSHA': return loaded.has(args[1]) ? bulk('ran') : Buffer.from('-NOSCRIPT No matching script.\r\n');
      default: return Buffer.from('-ERR unknown\r\n');
    }
  });
}

test('EVALSHA first; NOSCRIPT loads the exact source, verifies its SHA1 and retries once', async () => {
  const bundle = new Bundle([['fence', Buffer.from('return "ok"')], ['claim', Buffer.from('return 1')]]);
  const srv = await scriptServer({ loadAnswer: (src) => require('node:crypto').createHash('sha1').update(src).digest('hex') });
  const s = new Session({ address: srv.address, bundle });
  await s.connect();
  assert.equal((await s.evalsha('claim', ['k'], [])).toString(), 'ran');
  const cmds = srv.seen.map((a) => a.slice(0, 2).join(' '));
  const fence = bundle.script('fence').sha1;
  const claim = bundle.script('claim').sha1;
  assert.deepEqual(cmds, ['HELLO 2', `EVALSHA ${fence}`, 'SCRIPT LOAD', `EVALSHA ${fence}`, `EVALSHA ${claim}`, 'SCRIPT LOAD', `EVALSHA ${claim}`]);
  assert.equal(srv.seen[5][2], 'return 1');
  s.closeAll();
  srv.close();
});

test('a SCRIPT LOAD answering another SHA1 is refused, never retried', async () => {
  const bundle = new Bundle([['fence', Buffer.from('return "ok"')]]);
  const srv = await scriptServer({ loadAnswer: () => 'f'.repeat(40) });
  const s = new Session({ address: srv.address, bundle });
  await assert.rejects(s.connect(), /SCRIPT LOAD fence: server answered SHA1 f{40}/);
  assert.equal(srv.seen.filter((a) => a[0] === 'EVALSHA').length, 1);
  srv.close();
});

test('a server that rejects HELLO 2 is EMQSERVER before any other command', async () => {
  const srv = await serve(() => Buffer.from('-ERR unknown command \'HELLO\'\r\n'));
  const s = new Session({ address: srv.address, bundle: new Bundle([['fence', Buffer.from('x')]]) });
  await assert.rejects(s.connect(), (e) => e.type === 'EMQSERVER');
  assert.deepEqual(srv.seen.map((a) => a[0]), ['HELLO']);
  srv.close();
});

// A server that falls silent without closing the socket: the command's reply falls overdue and
// the connection fails as lost (onLost), everything in flight rejected with ConnectionError; a
// blocking pop's reply falls due only when its own timeout ends.
test('a silent server is a lost connection once a reply is overdue', async () => {
  const srv = await serve(() => undefined); // reads every command, answers none
  const c = await Connection.open(srv.address);
  let lost = null;
  c.onLost = (err) => { lost = err; };
  const t0 = Date.now();
  const pop = c.sendBlocking(1000, 'BLPOP', 'k', '1').then(() => null, (err) => err);
  const err = await c.send('PING').then(() => null, (e) => e);
  assert.ok(err instanceof errors.ConnectionError, `want a ConnectionError, got ${err}`);
  assert.match(err.message, /fell silent/);
  assert.ok(Date.now() - t0 >= 1000 + REPLY_GRACE_MS, 'not before the blocking pop\'s reply fell due (1 s) plus the grace');
  assert.ok((await pop) instanceof errors.ConnectionError);
  assert.ok(lost instanceof errors.ConnectionError);
  srv.close();
});

// A process kept off the CPU past the grace (a loaded machine) wakes with its timers first, while
// the reply that came meanwhile still waits unread in the socket: that is no silence.
test('a reply waiting unread when the watch fires is read, not taken for silence', async () => {
  const srv = await serve((args, sock) => {
    sock.write('+PONG\r\n');
    const until = Date.now() + REPLY_GRACE_MS + 300; // this process (the client too) stays busy past the grace
    while (Date.now() < until);
    return undefined;
  });
  const c = await Connection.open(srv.address);
  let lost = null;
  c.onLost = (err) => { lost = err; };
  const got = await c.send('PING').then((r) => r.toString(), (e) => e);
  c.close();
  srv.close();
  assert.equal(got, 'PONG');
  assert.equal(lost, null);
});
