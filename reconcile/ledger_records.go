package reconcile

import "github.com/converge-go/converge/internal/mapshrink"

// records stores the ledger's records by value in chunks of recordChunk,
// found by key through index: one map entry of a key and a slot (24 bytes)
// and one 80-byte record per key, where a map of records would move
// them at every rehash and keep every record's slot after a burst. Slots
// of records let go are reused; once most are free the records are moved
// into chunks sized to them (compact), so that a burst's memory goes back
// to the heap.
type records struct {
	index  map[string]int32
	chunks []*[recordChunk]record
	free   []int32 // slots of released records, for reuse
	peak   int     // the most records held since the last compaction
}

// recordChunk is how many records one allocation holds (20 KiB).
const recordChunk = 256

// slots returns how many slots the chunks hold: every slot below it is
// valid for at.
func (rs *records) slots() int64 { return int64(len(rs.chunks)) * recordChunk }

func (rs *records) at(slot int32) *record {
	return &rs.chunks[slot/recordChunk][slot%recordChunk]
}

// add makes an empty record for key, which has none, and returns it with
// its slot.
func (rs *records) add(key string) (*record, int32) {
	var slot int32
	if n := len(rs.free); n > 0 {
		slot = rs.free[n-1]
		rs.free = rs.free[:n-1]
	} else {
		slot = int32(len(rs.chunks) * recordChunk)
		rs.chunks = append(rs.chunks, new([recordChunk]record))
		for s := slot + recordChunk - 1; s > slot; s-- {
			rs.free = append(rs.free, s)
		}
	}
	rs.index[key] = slot
	rs.peak = max(rs.peak, len(rs.index))
	r := rs.at(slot)
	r.key = key
	return r, slot
}

// remove forgets key's record.
func (rs *records) remove(key string) {
	slot := rs.index[key]
	delete(rs.index, key)
	*rs.at(slot) = record{}
	rs.free = append(rs.free, slot)
}

// shrinkDue reports whether the records have fallen to an eighth of a
// peak above mapshrink.Floor: compact then gives most of their memory back.
func (rs *records) shrinkDue() bool {
	return rs.peak > mapshrink.Floor && len(rs.index) < rs.peak/8
}

// compact moves the records into as few chunks as they need and rebuilds
// the index at its size; it returns, by old slot, each record's new slot.
// It costs the records held, paid for by the seven times as many released
// since the peak.
func (rs *records) compact() map[int32]int32 {
	moved := make(map[int32]int32, len(rs.index))
	old := rs.chunks
	at := func(slot int32) *record { return &old[slot/recordChunk][slot%recordChunk] }
	index := make(map[string]int32, len(rs.index))
	n := len(rs.index)
	rs.chunks = make([]*[recordChunk]record, 0, (n+recordChunk-1)/recordChunk)
	rs.free = nil
	next := int32(0)
	for key, slot := range rs.index {
		if int(next) == len(rs.chunks)*recordChunk {
			rs.chunks = append(rs.chunks, new([recordChunk]record))
		}
		*rs.at(next) = *at(slot)
		index[key] = next
		moved[slot] = next
		next++
	}
	for s := int32(len(rs.chunks)*recordChunk) - 1; s >= next; s-- {
		rs.free = append(rs.free, s)
	}
	rs.index = index
	rs.peak = n
	return moved
}

// reserve sizes an empty index for n keys.
func (rs *records) reserve(n int) {
	if len(rs.index) == 0 {
		rs.index = make(map[string]int32, n)
		rs.peak = max(rs.peak, n)
	}
}

// each calls fn for every record, in slot order.
func (rs *records) each(fn func(r *record)) {
	for _, c := range rs.chunks {
		for i := range c {
			if c[i].key != "" {
				fn(&c[i])
			}
		}
	}
}
