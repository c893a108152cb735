package reconcile

import (
	"fmt"
	"math/bits"
)

// trigger is what woke a key, carried as queue tags: bits for the kinds of
// wake-up, and one bit per source (the first maxTaggedSources of
// Options.Sources). The tags of wake-ups that coalesce into one reconcile
// are ORed, so the set is bounded whatever the number of wake-ups.
type trigger = uint32

const (
	trigCreated   trigger = 1 << iota // the primary store: created
	trigUpdated                       // the primary store: updated
	trigDeleted                       // the primary store: deleted
	trigListed                        // the initial list, or a re-list
	trigEnqueued                      // Enqueue or EnqueueAll
	trigResync                        // Options.ResyncPeriod
	trigRetry                         // a failure's or conflict's backoff
	trigRequeue                       // Result.Requeue or RequeueAfter
	trigWrite                         // a change held back while the controller's own write was in flight
	trigRecovered                     // a failed key retried at once as its dependencies came back up
	trigStoreBack                     // a key that waited for the store (AwaitingStore), queued as it serves again

	firstSourceBit   = 12
	maxTaggedSources = 32 - firstSourceBit
)

var triggerNames = [...]string{"created", "updated", "deleted", "listed", "enqueued", "resync", "retry", "requeue", "held-change", "dependency-up", "store-back"}

// sourceTrigger is the bit of Options.Sources[i] (none past
// maxTaggedSources: such a source still wakes keys, untagged).
func sourceTrigger(i int) trigger {
	if i >= maxTaggedSources {
		return 0
	}
	return 1 << (firstSourceBit + i)
}

// changeTrigger is the bit of a change of the primary store.
func changeTrigger[T any](ch *change[T]) trigger {
	switch {
	case ch.Initial:
		return trigListed
	case !ch.HasCur:
		return trigDeleted
	case ch.HadOld:
		return trigUpdated
	}
	return trigCreated
}

// triggerNamesOf returns the names of the bits of t: the kinds, then the
// sources by name (a source's Name method, else "source N").
func (c *Controller[T]) triggerNamesOf(t trigger) []string {
	if t == 0 {
		return nil
	}
	out := make([]string, 0, bits.OnesCount32(t))
	for i, name := range triggerNames {
		if t&(1<<i) != 0 {
			out = append(out, name)
		}
	}
	for i, src := range c.opts.Sources {
		if t&sourceTrigger(i) == 0 {
			continue
		}
		if n, ok := src.(interface{ Name() string }); ok && n.Name() != "" {
			out = append(out, "source "+n.Name())
		} else {
			out = append(out, fmt.Sprintf("source %d", i))
		}
	}
	return out
}
