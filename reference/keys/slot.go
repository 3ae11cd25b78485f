package keys

import "strings"

// Slots is the number of cluster hash slots.
const Slots = 16384

// Slot is the cluster slot of key: CRC16/XMODEM of its hash tag (the bytes between the first '{'
// and the first '}' after it, when non-empty; else the whole key) mod 16384.
func Slot(key string) uint16 {
	return CRC16(HashTag(key)) % Slots
}

// HashTag is the part of key the cluster hashes.
func HashTag(key string) string {
	if open := strings.IndexByte(key, '{'); open >= 0 {
		if n := strings.IndexByte(key[open+1:], '}'); n > 0 {
			return key[open+1 : open+1+n]
		}
	}
	return key
}

// CRC16 is CRC16/XMODEM (poly 0x1021, init 0, no reflection, no final xor), the cluster's CRC.
func CRC16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// Slot is the cluster slot every key of the queue answers.
func (q Q) Slot() uint16 { return Slot(q.Pending()) }
