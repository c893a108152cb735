package bench

import "fmt"

// keyPrefix starts every generated key; keyDigits decimal digits follow.
const (
	keyPrefix = "obj-"
	keyDigits = 8
)

// NewKeys returns n distinct keys shaped like store keys. Key i is
// "obj-" followed by i in eight digits, so KeyIndex can recover i without
// a lookup table.
func NewKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("%s%0*d", keyPrefix, keyDigits, i)
	}
	return keys
}

// KeyIndex returns the position of a key made by NewKeys.
func KeyIndex(key string) int {
	i := 0
	for _, c := range []byte(key[len(keyPrefix):]) {
		i = i*10 + int(c-'0')
	}
	return i
}

// stopPrefix starts the keys that tell a worker to return.
const stopPrefix = "stop-"

// stopKeys returns n distinct keys that isStopKey recognises.
func stopKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("%s%d", stopPrefix, i)
	}
	return keys
}

// isStopKey reports whether key was made by stopKeys.
func isStopKey(key string) bool {
	return len(key) >= len(stopPrefix) && key[:len(stopPrefix)] == stopPrefix
}
