package robustness

import (
	"context"
	"math/rand/v2"

	"github.com/converge-go/converge/store"
)

// client is one workload client: a sequential loop of random operations on
// shared keys, through its own Recorder. It remembers the last revision it
// saw of each key and uses it as the expected revision of its updates and
// deletes, as a read-modify-write caller would; after a conflict it reads
// the key again before its next update or delete of it. A mix of successes,
// conflicts and misses arises.
type client struct {
	id    int
	rec   *Recorder
	keys  []string
	rng   *rand.Rand
	seen  []int64
	stale []bool // a write failed its precondition since the key was last read
	seq   int
}

func newClient(id int, rec *Recorder, keys []string, seed uint64) *client {
	return &client{
		id:    id,
		rec:   rec,
		keys:  keys,
		rng:   rand.New(rand.NewPCG(seed, uint64(id))),
		seen:  make([]int64, len(keys)),
		stale: make([]bool, len(keys)),
	}
}

// step performs one random operation. Errors are part of the history, not
// failures of the client: step returns none.
func (c *client) step(ctx context.Context) {
	k := c.rng.IntN(len(c.keys))
	key := c.keys[k]
	c.seq++
	v := Value{Client: c.id, Seq: c.seq}
	p := c.rng.IntN(100)
	if p >= 55 && c.stale[k] {
		p = 0 // read before writing again
	}
	switch {
	case p < 35:
		obj, err := c.rec.Get(ctx, key)
		c.saw(k, obj, err)
	case p < 55:
		obj, err := c.rec.Create(ctx, key, v)
		c.saw(k, obj, err)
	case p < 85:
		obj, err := c.rec.Update(ctx, key, v, c.seen[k])
		c.saw(k, obj, err)
	default:
		_, err := c.rec.Delete(ctx, key, c.seen[k])
		c.saw(k, store.Object[Value]{}, err)
	}
}

// saw updates the client's idea of key k's revision after a call.
func (c *client) saw(k int, obj store.Object[Value], err error) {
	switch classify(OpGet, err) {
	case ResultOK:
		c.seen[k], c.stale[k] = obj.Revision, false
	case ResultNotFound:
		c.seen[k], c.stale[k] = 0, false
	case ResultConflict, ResultExists:
		c.stale[k] = true
	}
}
