package intent

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
)

// maxKeyPart bounds the part of an ID that spells the key.
const maxKeyPart = 64

// ID names attempt number attempt of generation gen of the object at key
// whose CreateRevision is createRevision (its incarnation: an object
// deleted and created again under the same key has another). Step names
// its attempts with it, so that an intent recorded again after its record
// was lost has the same ID, and the world that knows the ID judges it.
//
// IDs are unique: two argument lists give two IDs (a key whose spelling
// runs over 64 bytes is shortened with a SHA-256 of it). An ID holds only
// A-Z a-z 0-9 . _ - ~, so it is safe as a file name, in an environment
// variable or a SQL string, and is at most 128 bytes long. It reads as the
// key (each other byte as _XX in hex), then .cCREATEREVISION.gGEN.aATTEMPT.
func ID(key string, createRevision, gen int64, attempt int) string {
	var b strings.Builder
	b.Grow(len(key) + 32)
	for i := 0; i < len(key); i++ {
		c := key[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('_')
		b.WriteString(strings.ToUpper(hex.EncodeToString([]byte{c})))
	}
	name := b.String()
	if len(name) > maxKeyPart {
		// '~' never appears in a spelled key: a shortened one is never
		// mistaken for a spelled one.
		sum := sha256.Sum256([]byte(key))
		name = name[:40] + "~" + hex.EncodeToString(sum[:10])
	}
	return name + ".c" + strconv.FormatInt(createRevision, 10) + ".g" + strconv.FormatInt(gen, 10) + ".a" + strconv.Itoa(attempt)
}
