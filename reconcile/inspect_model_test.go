package reconcile

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/queue"
)

// TestInspectListsWhatSnapshotListsWhateverTheOverlapOfQueueAndRecords:
// Inspect's walks count each key once and list it as Snapshot does for
// every overlap of the three places a key can be (queued, with a pending
// change, with a record of its last reconcile), including pending keys
// that are not queued (between runs, or a shard's key before its
// disowning), for every prefix, state filter, order and page size.
func TestInspectListsWhatSnapshotListsWhateverTheOverlapOfQueueAndRecords(t *testing.T) {
	for seed := range uint64(30) {
		rng := rand.New(rand.NewPCG(seed, 7))
		c := idleController[string](t, "model")
		q := c.q()
		base := time.Now()
		for i := range 40 {
			key := fmt.Sprintf("%s/%02d", []string{"a", "b", "ab"}[rng.IntN(3)], i)
			switch rng.IntN(3) {
			case 1:
				q.Add(key)
			case 2:
				q.AddWith(key, queue.AddOptions{After: time.Hour})
			}
			if rng.IntN(2) == 0 {
				c.led.changed(key, int64(i), c.led.mono(base.Add(time.Duration(rng.IntN(5))*time.Second)))
			}
			if rng.IntN(2) == 0 {
				setLast(c, key, []Outcome{Success, Failure, Conflict}[rng.IntN(3)], int64(i))
			}
		}
		// One key processing: the first waiting key is handed out.
		q.Add("ab/processing")
		k, err := q.Get(context.Background())
		require.NoError(t, err)
		defer q.Done(k)
		snap := c.Snapshot()
		for _, prefix := range []string{"", "a", "a/", "b/", "zz"} {
			for _, states := range [][]queue.State{nil, {0}, {queue.Waiting, queue.Processing}, {queue.Delayed}} {
				var want []KeyState
				for _, s := range snap {
					if strings.HasPrefix(s.Key, prefix) && (len(states) == 0 || slices.Contains(states, s.State)) {
						want = append(want, s)
					}
				}
				for sort := ByKey; sort <= ByPendingSince; sort++ {
					for _, size := range []int{1, 4, 100} {
						desc := size == 4 // every order both ways, over pages
						var got []KeyState
						for offset := 0; ; offset += size {
							page := c.Inspect(KeyQuery{Prefix: prefix, States: states, Sort: sort, Descending: desc, Offset: offset, Limit: size})
							require.Equal(t, len(want), page.Matched, "seed %d prefix %q states %v sort %d", seed, prefix, states, sort)
							got = append(got, page.Keys...)
							if len(page.Keys) < size {
								break
							}
						}
						slices.SortFunc(got, func(a, b KeyState) int { return strings.Compare(a.Key, b.Key) })
						require.Equal(t, want, got, "seed %d prefix %q states %v sort %d size %d", seed, prefix, states, sort, size)
					}
				}
				counts := c.Inspect(KeyQuery{Prefix: prefix, States: states}).States
				total := 0
				for _, n := range counts {
					total += n
				}
				inPrefix := 0
				for _, s := range snap {
					if strings.HasPrefix(s.Key, prefix) {
						inPrefix++
						counts[s.State]--
					}
				}
				require.Equal(t, inPrefix, total, "seed %d prefix %q: every key counted once", seed, prefix)
				for st, n := range counts {
					require.Zero(t, n, "seed %d prefix %q: state %v miscounted", seed, prefix, st)
				}
			}
		}
	}
}
