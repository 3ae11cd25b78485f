'use strict';
// Cluster slots: CRC16/XMODEM (poly 0x1021, init 0) of the hash tag, mod 16384.

const TABLE = (() => {
  const t = new Uint16Array(256);
  for (let i = 0; i < 256; i++) {
    let c = i << 8;
    for (let b = 0; b < 8; b++) c = c & 0x8000 ? ((c << 1) ^ 0x1021) & 0xffff : (c << 1) & 0xffff;
    t[i] = c;
  }
  return t;
})();

function crc16(bytes) {
  const buf = typeof bytes === 'string' ? Buffer.from(bytes, 'utf8') : bytes;
  let crc = 0;
  for (const b of buf) crc = ((crc << 8) & 0xffff) ^ TABLE[((crc >> 8) ^ b) & 0xff];
  return crc;
}

// hashTag is what the cluster hashes: the bytes between the first '{' and the next '}', when
// that span is non-empty; otherwise the whole key.
function hashTag(key) {
  const buf = typeof key === 'string' ? Buffer.from(key, 'utf8') : key;
  const open = buf.indexOf(0x7b);
  if (open >= 0) {
    const close = buf.indexOf(0x7d, open + 1);
    if (close > open + 1) return buf.subarray(open + 1, close);
  }
  return buf;
}

const slot = (key) => crc16(hashTag(key)) % 16384;

module.exports = { crc16, hashTag, slot };
