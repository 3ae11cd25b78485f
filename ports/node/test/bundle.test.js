'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const { Bundle, VERSION, sha1 } = require('../lib/bundle');

test('A1: the digest is SHA1 over sorted name:sha1 lines, each ending in a newline', () => {
  const b = new Bundle([['zeta', Buffer.from('return 2')], ['Alpha', Buffer.from('return 1')], ['alpha', Buffer.from('')]]);
  const lines = ['Alpha', 'alpha', 'zeta'].map((n) => `${n}:${b.script(n).sha1}\n`).join('');
  assert.equal(b.digest, sha1(lines));
  assert.equal(b.script('alpha').sha1, 'da39a3ee5e6b4b0d3255bfef95601890afd80709');
  assert.equal(b.version, VERSION);
});

test('the repository bundle loads byte for byte, fence included', () => {
  const b = Bundle.load();
  for (const name of ['fence', 'enqueue', 'claim', 'complete', 'retry', 'fail', 'reap', 'promote', 'extend',
    'checkpoint', 'revive', 'purge', 'pause', 'resume', 'lane_enqueue', 'lane_claim', 'lane_pause',
    'lane_resume', 'lane_ceiling']) {
    assert.match(b.script(name).sha1, /^[0-9a-f]{40}$/, name);
  }
  assert.match(b.digest, /^[0-9a-f]{40}$/);
  assert.throws(() => b.script('nosuch'), /no script named nosuch/);
});
