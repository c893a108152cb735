package reconcile

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/converge-go/converge/queue"
	"github.com/converge-go/converge/store"
)

// A controller's view is the keys it reconciles: the valid store keys
// under Options.Prefix. A key outside it, handed in by a Source, a
// FromStore mapper or Enqueue, is refused where it enters: never queued,
// never reconciled (least of all as Deleted, since the cache cannot say
// whether the store holds a key it does not watch), logged the first time,
// counted in Health.Refused and Metrics.KeyRefused. A key of the view that
// a sharded controller does not own is another matter: it is queued, then
// disowned (see Sharder).
const (
	// maxRefusedKeys bounds Health.RefusedKeys.
	maxRefusedKeys = 16
	// maxRememberedRefusals bounds the distinct refused keys a controller
	// remembers, to log each once and to name them in Health.
	maxRememberedRefusals = 256
	// refusedKeyLen is the longest refused key remembered whole; a longer
	// one is remembered and shown cut short.
	refusedKeyLen = 128
)

// refusals counts the keys a controller refused and remembers the first
// maxRememberedRefusals distinct ones. It has a lock of its own: refusals
// are rare, and the per-key bookkeeping under Controller.mu never waits
// for them. The zero value is ready to use.
type refusals struct {
	mu    sync.Mutex
	count int
	keys  map[string]struct{} // the remembered keys (shown form); nil until the first
	full  bool                // a distinct key came past the bound
}

// note counts a refusal of key. first: key is newly remembered (log it);
// overflow: it is the first distinct key past the bound (say once that
// further keys go unlogged).
func (r *refusals) note(key string) (shown string, first, overflow bool) {
	shown = shownKey(key)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.count++
	if _, ok := r.keys[shown]; ok {
		return shown, false, false
	}
	if len(r.keys) >= maxRememberedRefusals {
		overflow, r.full = !r.full, true
		return shown, false, overflow
	}
	if r.keys == nil {
		r.keys = make(map[string]struct{})
	}
	r.keys[shown] = struct{}{}
	return shown, true, false
}

// report returns the refusals counted and the first maxRefusedKeys keys
// remembered, in key order.
func (r *refusals) report() (int, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.count == 0 {
		return 0, nil
	}
	first := pageHeap[string]{cmp: strings.Compare, max: maxRefusedKeys}
	for key := range r.keys {
		first.offer(key)
	}
	return r.count, slices.Clip(first.sorted())
}

// shownKey is key as refusals remember it: whole up to refusedKeyLen bytes,
// else cut there (at a rune's start) and marked with its length.
func shownKey(key string) string {
	if len(key) <= refusedKeyLen {
		return key
	}
	n := refusedKeyLen
	for n > refusedKeyLen-utf8.UTFMax && !utf8.RuneStart(key[n]) {
		n--
	}
	return fmt.Sprintf("%s… (%d bytes)", key[:n], len(key))
}

// inView returns nil if key is in the controller's view, else an error
// matching ErrInvalid that says why not. It allocates only for a key
// outside the view.
func (c *Controller[T]) inView(key string) error {
	if err := store.ValidateKey(key); err != nil {
		return fmt.Errorf("%w: not a store key: %w", ErrInvalid, err)
	}
	if !strings.HasPrefix(key, c.opts.Prefix) {
		return fmt.Errorf("%w: key %q is outside the controller's prefix %q", ErrInvalid, key, c.opts.Prefix)
	}
	return nil
}

// admitKey queues key, tagged with what woke it, if it is in the view;
// otherwise it refuses it and returns why.
func (c *Controller[T]) admitKey(key string, opts queue.AddOptions) error {
	if err := c.inView(key); err != nil {
		c.refuse(key, opts.Tags, err)
		return err
	}
	c.q().AddWith(key, opts)
	return nil
}

// refuse records that key, handed in by why, was refused for err.
func (c *Controller[T]) refuse(key string, why trigger, err error) {
	shown, first, overflow := c.refused.note(key)
	if c.opts.Metrics != nil {
		c.opts.Metrics.KeyRefused(c.opts.Name)
	}
	switch {
	case first:
		c.opts.Logger.Error("key outside the controller's view refused; not reconciled",
			"key", shown, "from", c.triggerNamesOf(why), "error", err)
	case overflow:
		c.opts.Logger.Error("more distinct keys refused than are remembered; further ones are counted, not logged",
			"remembered", maxRememberedRefusals)
	}
}
