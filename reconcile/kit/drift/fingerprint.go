package drift

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
)

// Fingerprint returns a short hash of fields, for Observed.Fingerprint:
// equal fields give equal fingerprints, and fields that differ in any way
// (split differently included: "ab","c" and "a","bc") give different ones,
// but for collisions of its 128 bits of SHA-256. It costs one hash of the
// fields' bytes.
func Fingerprint(fields ...string) string {
	h := sha256.New()
	var n [binary.MaxVarintLen64]byte
	for _, f := range fields {
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(f)))])
		h.Write([]byte(f))
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}
