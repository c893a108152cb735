package robustness_test

import (
	"slices"
	"sync"
	"testing"

	"github.com/converge-go/converge/reconcile/internal/robustness"
)

// firings returns the counts (from 1) at which s fires over n counts,
// counted one at a time.
func firings(s *robustness.Schedule, n int) []int {
	var at []int
	for i := 1; i <= n; i++ {
		if s.Fires() {
			at = append(at, i)
		}
	}
	return at
}

// A Schedule fires first within its mean gap and then every 1 to
// 2*every-1 counts, the same counts for the same seed, so that how many
// faults a run sees is fixed by its seed and its length.
func TestScheduleFiresWithinItsGapsForEverySeed(t *testing.T) {
	for _, every := range []int{1, 2, 20, 33, 50} {
		for seed := range uint64(200) {
			at := firings(robustness.NewSchedule(every, seed, 1), 20*every)
			if len(at) == 0 || at[0] > every {
				t.Fatalf("every %d, seed %d: first firing at %v, want within %d", every, seed, at, every)
			}
			for i := 1; i < len(at); i++ {
				if gap := at[i] - at[i-1]; gap < 1 || gap > 2*every-1 {
					t.Fatalf("every %d, seed %d: gap %d between firings at %d and %d, want 1 to %d", every, seed, gap, at[i-1], at[i], 2*every-1)
				}
			}
			if again := firings(robustness.NewSchedule(every, seed, 1), 20*every); !slices.Equal(at, again) {
				t.Fatalf("every %d, seed %d: firings %v, then %v for the same seed", every, seed, at, again)
			}
		}
	}
	if got := firings(robustness.ScheduleFor(1, 7, 0), 10); len(got) != 10 {
		t.Errorf("a schedule of probability 1 fired at %v of 10 counts, want all", got)
	}
	if s := robustness.ScheduleFor(0, 7, 0); s != nil || s.Fires() || s.FiresWithin(5) != -1 {
		t.Errorf("a schedule of probability 0 is %v, want nil, which never fires", s)
	}
	if e := robustness.ScheduleFor(0.03, 7, 0).Every(); e != 33 {
		t.Errorf("a schedule of probability 0.03 fires every %d counts on average, want 33", e)
	}
}

// FiresWithin fires on the same counts as Fires one count at a time,
// however the counts are batched: a frame is cut at the same place
// whether the server wrote it alone or in a batch.
func TestScheduleFiresOnTheSameCountsWhateverTheBatching(t *testing.T) {
	const every, n = 10, 1000
	want := firings(robustness.NewSchedule(every, 3, 9), n)
	for _, batch := range []int{2, 7, 64, n} {
		s := robustness.NewSchedule(every, 3, 9)
		var at []int
		for counted := 0; counted < n; {
			i := s.FiresWithin(min(batch, n-counted))
			if i < 0 {
				counted += min(batch, n-counted)
				continue
			}
			counted += i + 1
			at = append(at, counted)
		}
		if !slices.Equal(at, want) {
			t.Errorf("batches of %d fired at %v, one at a time at %v", batch, at, want)
		}
	}
}

// Counted from concurrent goroutines, a Schedule fires exactly as often as
// counted one at a time: scheduling chooses which calls the counts fall
// on, not how many fire.
func TestScheduleFiresAsOftenWhenCountedConcurrently(t *testing.T) {
	const every, goroutines, each = 20, 8, 500
	want := len(firings(robustness.NewSchedule(every, 5, 1), goroutines*each))
	s := robustness.NewSchedule(every, 5, 1)
	var wg sync.WaitGroup
	var mu sync.Mutex
	got := 0
	for range goroutines {
		wg.Go(func() {
			n := len(firings(s, each))
			mu.Lock()
			got += n
			mu.Unlock()
		})
	}
	wg.Wait()
	if got != want {
		t.Errorf("%d firings over %d concurrent counts, %d counted one at a time", got, goroutines*each, want)
	}
}
