package lock

import "time"

// Record is the value a Lease keeps in the store at its key while it is held.
//
// Nothing in it is a timestamp: expiry is judged by each contender on its own
// monotonic clock, from how long it has seen the record unchanged, so clocks
// of different hosts are never compared.
type Record struct {
	// Holder names the process holding the lease, for people and logs.
	Holder string `json:"holder"`
	// TTL is the holder's promise: it stops acting within TTL of any change
	// it made to the record. Contenders wait at least this long (and at
	// least their own TTL) with the record unchanged before taking over.
	// Encoded as nanoseconds.
	TTL time.Duration `json:"ttl"`
	// Renewals counts the holder's renewals in this term. Each renewal bumps
	// it, so that every renewal writes a new value and a new revision.
	Renewals int64 `json:"renewals"`
}
