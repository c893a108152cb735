package robustness

import (
	"fmt"
	"strconv"
)

// Value is what the workload writes: unique per write, so that a value seen
// in a read or a watch event names the one write that stored it.
type Value struct {
	Client int `json:"c"`
	Seq    int `json:"s"`
}

// String returns "c<client>/<seq>".
func (v Value) String() string { return fmt.Sprintf("c%d/%d", v.Client, v.Seq) }

// KeyPrefix is the prefix of every key the workload writes; the watcher
// watches it.
const KeyPrefix = "robustness/"

// MaxKeys is the largest number of keys a workload may use: the model keeps
// one fixed-size slot per key.
const MaxKeys = 8

// Keys returns the n keys of a workload: KeyPrefix followed by 0 to n-1.
func Keys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = KeyPrefix + strconv.Itoa(i)
	}
	return keys
}
