package queue

import "hash/maphash"

// index finds a key's record: an open-addressing hash set of records, each
// found by the key it holds, so that the key is stored once (in its record)
// and a slot costs a pointer and two bytes of meta. Slots are probed
// linearly; the set grows at a load of 3/4 and is never fuller, and a
// deletion shifts the records after it back (no tombstones), so every
// probe sequence stays unbroken and the load is exactly len/cap. At
// 1,000,000 keys it holds 2²¹ slots: 21 bytes per key, where a Go map of
// keys and pointers held 30–56.
//
// A slot's meta spares the probes most reads of records, each a cache
// miss in a large set: the top 8 bits of its key's hash, compared before
// the record is read, and its distance from its key's home slot, so that a
// deletion knows whether a later record may move back without hashing that
// record's key again.
//
// Keys are hashed with maphash.Comparable, as a map hashes them. A key
// that is not equal to itself (a NaN) is never found, as in a map, and its
// record is still deleted: deletion finds a record by identity.
type index[K comparable] struct {
	slots []*item[K] // a power of two long, or nil while empty
	// meta is 0 for an empty slot; otherwise the top 8 bits of its key's
	// hash (tagOf) and, above them, 1 + its distance from its key's home
	// slot, capped at maxMetaDist (a longer distance is recomputed).
	meta []uint16
	n    int // records held
	seed maphash.Seed
}

// minIndexSlots is the size of the smallest table.
const minIndexSlots = 8

// maxMetaDist is the largest distance meta records exactly.
const maxMetaDist = 254

func (x *index[K]) len() int { return x.n }

func (x *index[K]) hash(key K) uint64 { return maphash.Comparable(x.seed, key) }

// tagOf returns the part of a hash that meta keeps: its top 8 bits.
func tagOf(h uint64) uint16 { return uint16(h >> 56) }

// metaOf returns the meta of a slot whose key has tag and sits dist slots
// after its home slot.
func metaOf(tag uint16, dist uint64) uint16 {
	return uint16(min(dist, maxMetaDist)+1)<<8 | tag
}

// find returns key's record, or nil and the key's hash for add.
func (x *index[K]) find(key K) (*item[K], uint64) {
	h := x.hash(key)
	if x.slots == nil {
		return nil, h
	}
	mask := uint64(len(x.slots) - 1)
	tag := tagOf(h)
	for i := h & mask; ; i = (i + 1) & mask {
		m := x.meta[i]
		if m == 0 {
			return nil, h
		}
		if m&0xff == tag {
			if it := x.slots[i]; it.key == key {
				return it, h
			}
		}
	}
}

// get returns key's record, or nil.
func (x *index[K]) get(key K) *item[K] {
	it, _ := x.find(key)
	return it
}

// add inserts it, whose key is not in the set and hashes to h.
func (x *index[K]) add(it *item[K], h uint64) {
	if 4*(x.n+1) > 3*len(x.slots) {
		x.resize(max(minIndexSlots, 2*len(x.slots)))
	}
	x.place(it, h)
	x.n++
}

// place puts it in the first free slot of its probe sequence.
func (x *index[K]) place(it *item[K], h uint64) {
	mask := uint64(len(x.slots) - 1)
	i := h & mask
	d := uint64(0)
	for x.meta[i] != 0 {
		i = (i + 1) & mask
		d++
	}
	x.slots[i] = it
	x.meta[i] = metaOf(tagOf(h), d)
}

// remove deletes it, which is in the set and whose key hashes to h.
func (x *index[K]) remove(it *item[K], h uint64) {
	mask := uint64(len(x.slots) - 1)
	i := h & mask
	for x.slots[i] != it {
		if x.slots[i] == nil {
			// Not on its probe sequence: a key whose hash is not
			// stable (a NaN in it). Look everywhere.
			i = x.slotOf(it)
			break
		}
		i = (i + 1) & mask
	}
	x.shiftBack(i)
	x.n--
}

// slotOf returns the slot holding it, which is in the set.
func (x *index[K]) slotOf(it *item[K]) uint64 {
	for i, s := range x.slots {
		if s == it {
			return uint64(i)
		}
	}
	panic("queue: record missing from its index")
}

// dist returns the distance of the record in slot i from its home slot.
func (x *index[K]) dist(i uint64) uint64 {
	if d := uint64(x.meta[i]>>8) - 1; d < maxMetaDist {
		return d
	}
	mask := uint64(len(x.slots) - 1)
	return (i - x.hash(x.slots[i].key)) & mask
}

// shiftBack empties slot i and moves back every later record of its run
// that may move there, so that no probe sequence crosses an empty slot
// before reaching its record (backward-shift deletion).
func (x *index[K]) shiftBack(i uint64) {
	mask := uint64(len(x.slots) - 1)
	for j := (i + 1) & mask; x.meta[j] != 0; j = (j + 1) & mask {
		// The record at j may move to i unless its home slot lies
		// cyclically in (i, j].
		if d, gap := x.dist(j), (j-i)&mask; d >= gap {
			x.slots[i] = x.slots[j]
			x.meta[i] = metaOf(x.meta[j]&0xff, d-gap)
			i = j
		}
	}
	x.slots[i] = nil
	x.meta[i] = 0
}

// resize moves every record to a new table of n slots, a power of two.
func (x *index[K]) resize(n int) {
	old := x.slots
	x.slots = make([]*item[K], n)
	x.meta = make([]uint16, n)
	for _, it := range old {
		if it != nil {
			x.place(it, x.hash(it.key))
		}
	}
}

// grow makes room for n more records, so that adding them resizes
// nothing: the table becomes the smallest that holds them below the growth
// load, if that is larger than it is.
func (x *index[K]) grow(n int) {
	if size := slotsFor(x.n + n); size > len(x.slots) {
		x.resize(size)
	}
}

// shrink rebuilds the table at the smallest size that holds its records
// below the growth load, so that the memory of a drained burst goes back to
// the heap.
func (x *index[K]) shrink() {
	if n := slotsFor(x.n); n < len(x.slots) {
		x.resize(n)
	}
}

// slotsFor returns the smallest table that holds n records below the
// growth load.
func slotsFor(n int) int {
	size := minIndexSlots
	for 4*n > 3*size {
		size *= 2
	}
	return size
}
