package queue

import (
	"hash/maphash"
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// indexBytesPerKey is what the index's table costs per record it holds.
func indexBytesPerKey[K comparable](x *index[K]) float64 {
	slot := unsafe.Sizeof(x.slots[0]) + unsafe.Sizeof(x.meta[0])
	return float64(uintptr(len(x.slots))*slot) / float64(x.len())
}

// TestIndexCostsTenBytesASlotAtALoadOfThreeEighthsToThreeQuarters pins the
// index's heap per key: a slot is a pointer and two bytes of meta, at a
// load between 3/8 (just grown) and 3/4 (about to grow), so 13.3 to 26.7
// bytes per key, and 21.0 at S3's 1,000,000 keys. A Go map of the same
// keys and pointers held 30 to 56.
func TestIndexCostsTenBytesASlotAtALoadOfThreeEighthsToThreeQuarters(t *testing.T) {
	x := index[int]{seed: maphash.MakeSeed()}
	records := make([]item[int], 1_000_000)
	for i := range records {
		records[i].key = i
		_, h := x.find(i)
		x.add(&records[i], h)
		if n := i + 1; n > minIndexSlots {
			if load := float64(n) / float64(len(x.slots)); load <= 3.0/8 || load > 3.0/4 {
				t.Fatalf("a load of %.3f at %d keys", load, n)
			}
		}
	}
	require.Len(t, x.slots, 1<<21)
	require.InDelta(t, 21.0, indexBytesPerKey(&x), 0.05)

	// Drained to a sixteenth, the table is rebuilt at a load above 3/8.
	for i := range records[:len(records)-len(records)/16] {
		x.remove(&records[i], x.hash(records[i].key))
	}
	x.shrink()
	require.Len(t, x.slots, 1<<17)
	require.LessOrEqual(t, indexBytesPerKey(&x), 10/(3.0/8))
	for i := len(records) - len(records)/16; i < len(records); i++ {
		if x.get(i) != &records[i] {
			t.Fatalf("key %d lost by the rebuild", i)
		}
	}
}

// TestIndexFindsEveryKeyAfterAnySequenceOfAddsAndRemoves: deletions shift
// the later records of a probe run back, so that no record is lost behind
// an emptied slot, however the runs wrap around the table's end. A small
// table and many keys make long, wrapping runs.
func TestIndexFindsEveryKeyAfterAnySequenceOfAddsAndRemoves(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 20 {
		x := index[int]{seed: maphash.MakeSeed()}
		model := map[int]*item[int]{}
		for step := range 5000 {
			k := rng.IntN(64)
			if it, ok := model[k]; ok && rng.IntN(2) == 0 {
				x.remove(it, x.hash(k))
				delete(model, k)
			} else if !ok {
				it := &item[int]{key: k}
				_, h := x.find(k)
				x.add(it, h)
				model[k] = it
			}
			if step%97 == 0 {
				x.shrink()
			}
			require.Equal(t, len(model), x.len(), "round %d step %d", round, step)
			for k := range 64 {
				if got := x.get(k); got != model[k] {
					t.Fatalf("round %d step %d: key %d found as %p, want %p", round, step, k, got, model[k])
				}
			}
		}
	}
}

// TestIndexShiftsBackRecordsFartherFromHomeThanMetaRecords: when a run of
// records is longer than the distance meta holds, the distances beyond it
// are recomputed, and deletions still keep every record findable. 380 keys
// whose home slots are the first 8 of a 512-slot table make distances up
// to about 380.
func TestIndexShiftsBackRecordsFartherFromHomeThanMetaRecords(t *testing.T) {
	x := index[int]{seed: maphash.MakeSeed()}
	var keys []int
	for k := 0; len(keys) < 380; k++ {
		if x.hash(k)&511 < 8 {
			keys = append(keys, k)
		}
	}
	records := map[int]*item[int]{}
	for _, k := range keys {
		records[k] = &item[int]{key: k}
		_, h := x.find(k)
		x.add(records[k], h)
	}
	require.Len(t, x.slots, 512)
	farthest := uint64(0)
	for i := range x.slots {
		if x.meta[i] != 0 {
			farthest = max(farthest, x.dist(uint64(i)))
		}
	}
	require.Greater(t, farthest, uint64(maxMetaDist))
	rng := rand.New(rand.NewPCG(3, 4))
	rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	for n, k := range keys {
		x.remove(records[k], x.hash(k))
		delete(records, k)
		if n%3 == 0 { // and put one back, at the end of the run
			k2 := keys[len(keys)-1-n/3]
			if records[k2] == nil {
				records[k2] = &item[int]{key: k2}
				_, h := x.find(k2)
				x.add(records[k2], h)
			}
		}
		for k, it := range records {
			if x.get(k) != it {
				t.Fatalf("after %d removals: key %d lost", n+1, k)
			}
		}
	}
}

// TestIndexRemovesARecordWhoseKeyIsNotEqualToItself: a NaN key is never
// found (every add of it is a new key, as in a map), yet its record is
// removed, by identity, without disturbing the others.
func TestIndexRemovesARecordWhoseKeyIsNotEqualToItself(t *testing.T) {
	x := index[float64]{seed: maphash.MakeSeed()}
	var records [40]item[float64]
	for i := range records {
		records[i].key = float64(i)
		if i%4 == 0 {
			records[i].key = math.NaN()
		}
		it, h := x.find(records[i].key)
		require.Nil(t, it)
		x.add(&records[i], h)
	}
	for i := 0; i < len(records); i += 4 {
		x.remove(&records[i], x.hash(records[i].key))
	}
	require.Equal(t, 30, x.len())
	for i := range records {
		if i%4 != 0 {
			require.Same(t, &records[i], x.get(float64(i)))
		}
	}
	for _, s := range x.slots {
		require.False(t, s != nil && s.key != s.key, "a NaN record left behind")
	}
}
