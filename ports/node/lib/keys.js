'use strict';
// The closed keyspace grammar (canon §2). Every key the port sends is built here; a bad queue or
// lane name is EMQKEY and a wrong-brand id EMQKIND, raised before any byte reaches the server.

const errors = require('./errors');
const ids = require('./ids');

const NAME = /^[a-z0-9_.-]{1,64}$/;
const QUEUE_TYPES = Object.freeze([
  'pending', 'active', 'scheduled', 'dead', 'errors', 'ckpt', 'meta', 'wake', 'ring', 'lanes', 'laneof',
]);
const BUNDLE = '{emq}:bundle';

function checkName(what, s) {
  if (typeof s !== 'string' || !NAME.test(s)) {
    throw errors.key(`${what} name ${JSON.stringify(s)}: want 1-64 bytes of [a-z0-9_.-]`);
  }
  return s;
}

// Queue binds a validated queue name; its methods build that queue's keys.
class Queue {
  constructor(name) {
    this.name = checkName('queue', name);
    this.prefix = `emq:{${name}}:`;
    for (const t of QUEUE_TYPES) this[t] = this.prefix + t;
    Object.freeze(this);
  }

  job(id) {
    ids.parseJob(id);
    return `${this.prefix}job:${id}`;
  }

  lane(name) {
    return `${this.prefix}lane:${checkName('lane', name)}`;
  }

  // build answers the port protocol's `key` op: one §2 type, with id or lane where it takes one.
  // build is the key op's builder. A lane or id given is held to its grammar whatever the type
  // (PROTOCOL.md B-90), in canon §2.4's order: the queue (the constructor), the type, the lane,
  // then the id.
  build(type, { id, lane } = {}) {
    if (type !== 'job' && type !== 'lane' && !QUEUE_TYPES.includes(type)) {
      throw errors.key(`key type ${JSON.stringify(type)} is not in the grammar`);
    }
    const laneKey = lane !== undefined || type === 'lane' ? this.lane(lane) : '';
    const jobKey = id !== undefined || type === 'job' ? this.job(id) : '';
    if (type === 'job') return jobKey;
    if (type === 'lane') return laneKey;
    return this[type];
  }
}

function minter(worker) {
  if (!Number.isInteger(worker) || worker < 0 || worker > ids.MAX_WORKER) {
    throw errors.key(`minter id ${worker}: want 0-${ids.MAX_WORKER}`);
  }
  return `{emq}:minter:${worker}`;
}

// parseKey is the total parse of §2: a key the grammar does not produce is EMQKEY.
function parseKey(key) {
  if (key === BUNDLE) return { type: 'bundle' };
  let m = /^\{emq\}:minter:(0|[1-9][0-9]{0,3})$/.exec(key);
  if (m && Number(m[1]) <= ids.MAX_WORKER) return { type: 'minter', worker: Number(m[1]) };
  m = /^emq:\{([^}]*)\}:(.*)$/s.exec(key);
  if (!m) throw errors.key(`key ${JSON.stringify(key)} does not parse`);
  const q = new Queue(m[1]);
  const rest = m[2];
  if (QUEUE_TYPES.includes(rest)) return { queue: q.name, type: rest };
  if (rest.startsWith('job:')) {
    const id = rest.slice(4);
    q.job(id);
    return { queue: q.name, type: 'job', id };
  }
  if (rest.startsWith('lane:')) {
    const lane = rest.slice(5);
    q.lane(lane);
    return { queue: q.name, type: 'lane', lane };
  }
  throw errors.key(`key ${JSON.stringify(key)} does not parse`);
}

module.exports = { NAME, QUEUE_TYPES, BUNDLE, Queue, checkName, minter, parseKey };
