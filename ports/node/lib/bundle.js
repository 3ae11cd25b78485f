'use strict';
// The Lua bundle, loaded byte for byte from lua/*.lua: the same bytes give the same SHA1s as every
// other runtime, and the digest (A1) is SHA1 over the sorted `name:sha1\n` lines.

const fs = require('node:fs');
const path = require('node:path');
const crypto = require('node:crypto');

const VERSION = 'echomq:2.0.0';
const DEFAULT_DIR = path.resolve(__dirname, '..', '..', '..', 'lua');

const sha1 = (b) => crypto.createHash('sha1').update(b).digest('hex');

class Bundle {
  constructor(scripts, version = VERSION) {
    this.version = version;
    this.scripts = new Map(); // name → { name, source: Buffer, sha1 }
    for (const [name, source] of scripts) this.scripts.set(name, { name, source, sha1: sha1(source) });
    const names = [...this.scripts.keys()].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
    this.digest = sha1(names.map((n) => `${n}:${this.scripts.get(n).sha1}\n`).join(''));
    Object.freeze(this);
  }

  static load(dir = process.env.EMQ_LUA_DIR || DEFAULT_DIR) {
    let files;
    try {
      files = fs.readdirSync(dir).filter((f) => f.endsWith('.lua'));
    } catch (err) {
      throw new Error(`bundle: cannot read ${dir}: ${err.message}`, { cause: err });
    }
    if (files.length === 0) throw new Error(`bundle: no *.lua scripts in ${dir}`);
    return new Bundle(files.map((f) => [f.slice(0, -4), fs.readFileSync(path.join(dir, f))]));
  }

  script(name) {
    const s = this.scripts.get(name);
    if (!s) throw new Error(`bundle: no script named ${name}`);
    return s;
  }
}

module.exports = { Bundle, VERSION, DEFAULT_DIR, sha1 };
