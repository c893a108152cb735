package boltstore

import (
	"bytes"
	"encoding/binary"
	"io"
)

// lastRevision reads the revision of a store file that Open refused, as
// far as it can still be read, with plain reads (never through a memory
// map): the revision counter found from the newer meta page, both intact,
// trusted only if the history holds an intact record of that revision and
// none of the next (or the history is empty and compacted up to it). ok is
// false when any of that cannot be read.
func lastRevision(r io.ReaderAt, size int64) (rev int64, ok bool) {
	find, ok := damagedFinder(r, size)
	if !ok {
		return 0, false
	}
	counter := func(key []byte) (int64, bool) {
		c, ok := find(metaBucket, key)
		if !ok || c.bucket || len(c.data) != 8 {
			return 0, false
		}
		return int64(binary.BigEndian.Uint64(c.data)), true
	}
	rev, okRev := counter(revisionKey)
	compacted, okCompacted := counter(compactedKey)
	if !okRev || !okCompacted || compacted < 0 || compacted > rev {
		return 0, false
	}
	if compacted == rev {
		return rev, true
	}
	rec, ok := find(historyBucket, revKey(rev))
	if !ok || rec.bucket || !intact(revKey(rev), rec.data) {
		return 0, false
	}
	if _, next := find(historyBucket, revKey(rev+1)); next {
		return 0, false
	}
	return rev, true
}

// lastIdentity reads the identity of a store file that Open refused, as
// lastRevision reads its revision: from the newer meta page, both intact,
// an identity record that checks. It returns "" when any of that cannot
// be read.
func lastIdentity(r io.ReaderAt, size int64) string {
	find, ok := damagedFinder(r, size)
	if !ok {
		return ""
	}
	rec, ok := find(metaBucket, identityKey)
	if !ok || rec.bucket {
		return ""
	}
	id, err := parseIdentity(rec.data)
	if err != nil {
		return ""
	}
	return id
}

// damagedFinder returns a function that finds a key of a top-level bucket
// of the damaged file r, from its newer meta page (both intact), or false
// if the meta pages do not read.
func damagedFinder(r io.ReaderAt, size int64) (func(bucket, key []byte) (leafValue, bool), bool) {
	m, ps, ok := newestMeta(r, size)
	if !ok {
		return nil, false
	}
	hwm := min(m.pgid, uint64(size/ps))
	return func(bucket, key []byte) (leafValue, bool) {
		v := &verifier{r: r, pageSize: ps, hwm: hwm, reached: make(map[uint64]bool)}
		b, ok := v.lookup(m.root, bucket, 0)
		if !ok || !b.bucket {
			return leafValue{}, false
		}
		return v.inBucket(b.data, key, 0)
	}, true
}

// newestMeta returns the meta page with the higher transaction id, and
// the page size, if both meta pages are intact.
func newestMeta(r io.ReaderAt, size int64) (meta, int64, bool) {
	head := make([]byte, pageHeaderSize+metaSize)
	var metas []meta
	if _, err := r.ReadAt(head, 0); err == nil {
		if m, err := parseMeta(head, 0); err == nil {
			metas = append(metas, m)
		}
	}
	if len(metas) == 1 {
		ps := int64(metas[0].pageSize)
		if _, err := r.ReadAt(head, ps); err == nil {
			if m, err := parseMeta(head, 1); err == nil && int64(m.pageSize) == ps {
				metas = append(metas, m)
			}
		}
	}
	// With one meta page damaged, the other may be the transaction before
	// the last one, whose revision is not the file's.
	if len(metas) != 2 {
		return meta{}, 0, false
	}
	m := metas[0]
	if metas[1].txid > m.txid {
		m = metas[1]
	}
	ps := int64(m.pageSize)
	if size < 2*ps {
		return meta{}, 0, false
	}
	return m, ps, true
}

// lookup finds key in the tree whose root is page id.
func (v *verifier) lookup(id uint64, key []byte, depth int) (leafValue, bool) {
	if depth > maxDepth {
		return leafValue{}, false
	}
	p, err := v.page(id, branchPageFlag|leafPageFlag)
	if err != nil {
		return leafValue{}, false
	}
	return v.find(p, id, key, depth)
}

// find finds key in page p (page id, or an inline bucket's page) and,
// for a branch, below it.
func (v *verifier) find(p []byte, id uint64, key []byte, depth int) (leafValue, bool) {
	if order.Uint16(p[8:]) == leafPageFlag {
		keys, values, err := leafElements(p, id)
		if err != nil {
			return leafValue{}, false
		}
		for i, k := range keys {
			if bytes.Equal(k, key) {
				return values[i], true
			}
		}
		return leafValue{}, false
	}
	keys, children, err := branchElements(p, id)
	if err != nil || len(keys) == 0 {
		return leafValue{}, false
	}
	// A branch's key is the first key of its child.
	child := children[0]
	for i, k := range keys {
		if bytes.Compare(k, key) <= 0 {
			child = children[i]
		}
	}
	return v.lookup(child, key, depth+1)
}

// inBucket finds key in the bucket whose value (header, and page if it
// is inline) is b.
func (v *verifier) inBucket(b, key []byte, depth int) (leafValue, bool) {
	if len(b) < bucketHeaderLen {
		return leafValue{}, false
	}
	if root := order.Uint64(b); root != 0 {
		return v.lookup(root, key, depth+1)
	}
	inline := b[bucketHeaderLen:]
	if len(inline) < pageHeaderSize || order.Uint16(inline[8:]) != leafPageFlag {
		return leafValue{}, false
	}
	return v.find(inline, 0, key, depth+1)
}
