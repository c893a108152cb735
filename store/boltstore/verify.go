package boltstore

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"io"
)

// bbolt's on-disk format (file format version 2), as far as verifyFile reads
// it. Integers are in the machine's byte order.
const (
	boltMagic       = 0xED0CDAED
	boltVersion     = 2
	pageHeaderSize  = 16 // id u64, flags u16, count u16, overflow u32
	elementSize     = 16 // branch: pos u32, ksize u32, pgid u64; leaf: flags u32, pos u32, ksize u32, vsize u32
	bucketHeaderLen = 16 // root pgid u64, sequence u64
	metaSize        = 64 // magic, version, page size, flags, root bucket, freelist, pgid, txid, checksum

	branchPageFlag   = 0x01
	leafPageFlag     = 0x02
	metaPageFlag     = 0x04
	freelistPageFlag = 0x10
	bucketLeafFlag   = 0x01

	noFreelist = ^uint64(0)
	// maxDepth bounds the nesting of pages and buckets verifyFile follows;
	// a tree of this store is a few levels deep.
	maxDepth = 64
)

var order = binary.NativeEndian

// verifyFile checks the bbolt structure of the file, reading it with
// ReadAt (never through a memory map, so damage cannot fault): both meta
// pages valid, the file a whole number of pages holding every page the meta
// counts, every page below the high-water mark either reachable exactly
// once from the root or free, every page of the right type, every element
// inside its page, keys in order within pages and between a branch and its
// children, buckets (inline ones included) well formed, and the freelist
// consistent. bbolt trusts all of this, and a file that passes can be
// memory-mapped and read by bbolt without faults or panics.
//
// It reads every reachable page once: its cost is that of reading the file.
func verifyFile(r io.ReaderAt, size int64) error {
	if size == 0 {
		return fmt.Errorf("%w: empty file (a store file is never empty)", ErrCorrupt)
	}
	var head [4096]byte
	n, err := r.ReadAt(head[:], 0)
	if err != nil && err != io.EOF {
		return fmt.Errorf("boltstore: read: %w", err)
	}
	m0, err := parseMeta(head[:n], 0)
	if err != nil {
		return err
	}
	ps := int64(m0.pageSize)
	if size%ps != 0 {
		return fmt.Errorf("%w: file of %d bytes is not a whole number of %d-byte pages", ErrCorrupt, size, ps)
	}
	if size < 2*ps {
		return fmt.Errorf("%w: file of %d bytes is shorter than its two meta pages", ErrCorrupt, size)
	}
	page1 := make([]byte, ps)
	if _, err := r.ReadAt(page1, ps); err != nil {
		return fmt.Errorf("boltstore: read: %w", err)
	}
	m1, err := parseMeta(page1, 1)
	if err != nil {
		return err
	}
	if m1.pageSize != m0.pageSize {
		return fmt.Errorf("%w: meta pages disagree on the page size (%d, %d)", ErrCorrupt, m0.pageSize, m1.pageSize)
	}
	// bbolt reads from the meta with the higher transaction id.
	m := m0
	if m1.txid > m0.txid {
		m = m1
	}
	for _, mm := range []meta{m0, m1} {
		if mm.pgid > uint64(size/ps) {
			return fmt.Errorf("%w: file holds %d pages, its meta page counts %d (truncated)", ErrCorrupt, size/ps, mm.pgid)
		}
	}
	if m.root >= m.pgid || m.pgid < 3 || (m.freelist != noFreelist && (m.freelist < 2 || m.freelist >= m.pgid)) {
		return fmt.Errorf("%w: meta page out of range (root %d, freelist %d, pages %d)", ErrCorrupt, m.root, m.freelist, m.pgid)
	}
	v := verifier{r: r, pageSize: ps, hwm: m.pgid, reached: make(map[uint64]bool)}
	v.reached[0], v.reached[1] = true, true
	if err := v.bucketTree(m.root, 0); err != nil {
		return err
	}
	if m.freelist != noFreelist {
		if err := v.freelist(m.freelist); err != nil {
			return err
		}
	}
	for id := uint64(2); id < m.pgid; id++ {
		if !v.reached[id] {
			return fmt.Errorf("%w: page %d is neither in use nor free", ErrCorrupt, id)
		}
	}
	return nil
}

type meta struct {
	pageSize                   uint32
	root, freelist, pgid, txid uint64
}

// parseMeta decodes and validates the meta page id held at the start of b.
func parseMeta(b []byte, id uint64) (meta, error) {
	if len(b) < pageHeaderSize+metaSize {
		return meta{}, fmt.Errorf("%w: file too short for meta page %d", ErrCorrupt, id)
	}
	p := b[pageHeaderSize : pageHeaderSize+metaSize]
	h := fnv.New64a()
	h.Write(p[:56])
	switch {
	case order.Uint32(p) != boltMagic:
		return meta{}, fmt.Errorf("%w: meta page %d: not a bbolt file (magic %#x)", ErrCorrupt, id, order.Uint32(p))
	case order.Uint32(p[4:]) != boltVersion:
		return meta{}, fmt.Errorf("%w: meta page %d: bbolt format version %d", ErrCorrupt, id, order.Uint32(p[4:]))
	case order.Uint64(p[56:]) != h.Sum64():
		// bbolt writes the 64 bytes of a meta within one disk sector,
		// which disks write whole: a crash does not tear it, damage does.
		return meta{}, fmt.Errorf("%w: meta page %d: checksum mismatch", ErrCorrupt, id)
	case order.Uint64(b) != id || order.Uint16(b[8:]) != metaPageFlag:
		return meta{}, fmt.Errorf("%w: meta page %d: bad page header", ErrCorrupt, id)
	}
	m := meta{
		pageSize: order.Uint32(p[8:]),
		root:     order.Uint64(p[16:]),
		freelist: order.Uint64(p[32:]),
		pgid:     order.Uint64(p[40:]),
		txid:     order.Uint64(p[48:]),
	}
	if m.pageSize < 1024 || m.pageSize > 1<<24 || m.pageSize&(m.pageSize-1) != 0 {
		return meta{}, fmt.Errorf("%w: meta page %d: page size %d", ErrCorrupt, id, m.pageSize)
	}
	return m, nil
}

// verifier walks the pages of one file.
type verifier struct {
	r        io.ReaderAt
	pageSize int64
	hwm      uint64
	reached  map[uint64]bool // pages in use or free, seen once each
}

// page reads page id with its overflow pages, marks them reached, and
// checks its header: its id, flags of one of the types in wantFlags, its
// overflow within the file.
func (v *verifier) page(id uint64, wantFlags uint16) ([]byte, error) {
	if id < 2 || id >= v.hwm {
		return nil, fmt.Errorf("%w: reference to page %d, outside 2..%d", ErrCorrupt, id, v.hwm-1)
	}
	head := make([]byte, v.pageSize)
	if _, err := v.r.ReadAt(head, int64(id)*v.pageSize); err != nil {
		return nil, fmt.Errorf("%w: page %d: %w", ErrCorrupt, id, err)
	}
	overflow := uint64(order.Uint32(head[12:]))
	switch {
	case order.Uint64(head) != id:
		return nil, fmt.Errorf("%w: page %d calls itself page %d", ErrCorrupt, id, order.Uint64(head))
	case !oneOf(order.Uint16(head[8:]), wantFlags):
		return nil, fmt.Errorf("%w: page %d has flags %#x", ErrCorrupt, id, order.Uint16(head[8:]))
	case overflow >= v.hwm-id:
		return nil, fmt.Errorf("%w: page %d overflows past the last page", ErrCorrupt, id)
	}
	for i := id; i <= id+overflow; i++ {
		if v.reached[i] {
			return nil, fmt.Errorf("%w: page %d is referenced twice", ErrCorrupt, i)
		}
		v.reached[i] = true
	}
	if overflow == 0 {
		return head, nil
	}
	buf := make([]byte, int64(overflow+1)*v.pageSize)
	if _, err := v.r.ReadAt(buf, int64(id)*v.pageSize); err != nil {
		return nil, fmt.Errorf("%w: page %d: %w", ErrCorrupt, id, err)
	}
	return buf, nil
}

// oneOf reports whether a page's flags are exactly one of the flags in
// want: bbolt compares them whole, and a page whose flags mix types is of
// none (its freelist page read panics, at Open).
func oneOf(flags, want uint16) bool {
	return flags != 0 && flags&(flags-1) == 0 && flags&want != 0
}

// bucketTree checks the tree of a bucket whose root is page id.
func (v *verifier) bucketTree(id uint64, depth int) error {
	return v.tree(id, nil, nil, depth)
}

// tree checks the subtree at page id, whose keys must lie in [lo, hi) (nil
// for no bound).
func (v *verifier) tree(id uint64, lo, hi []byte, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("%w: pages nested deeper than %d", ErrCorrupt, maxDepth)
	}
	p, err := v.page(id, branchPageFlag|leafPageFlag)
	if err != nil {
		return err
	}
	if order.Uint16(p[8:])&leafPageFlag != 0 {
		return v.leaf(p, id, lo, hi, depth)
	}
	keys, children, err := branchElements(p, id)
	if err != nil {
		return err
	}
	if len(keys) == 0 {
		return fmt.Errorf("%w: branch page %d is empty", ErrCorrupt, id)
	}
	if err := inOrder(keys, lo, hi, id); err != nil {
		return err
	}
	for i, child := range children {
		end := hi
		if i+1 < len(keys) {
			end = keys[i+1]
		}
		if err := v.tree(child, keys[i], end, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// leaf checks a leaf page p (found on page id) and the buckets it holds.
func (v *verifier) leaf(p []byte, id uint64, lo, hi []byte, depth int) error {
	keys, values, err := leafElements(p, id)
	if err != nil {
		return err
	}
	if err := inOrder(keys, lo, hi, id); err != nil {
		return err
	}
	for _, val := range values {
		if val.bucket {
			if err := v.bucket(val.data, id, depth); err != nil {
				return err
			}
		}
	}
	return nil
}

// bucket checks a bucket whose header and (for an inline bucket) page are
// b, found on page id.
func (v *verifier) bucket(b []byte, id uint64, depth int) error {
	if len(b) < bucketHeaderLen {
		return fmt.Errorf("%w: page %d: bucket value of %d bytes", ErrCorrupt, id, len(b))
	}
	if root := order.Uint64(b); root != 0 {
		return v.bucketTree(root, depth+1)
	}
	inline := b[bucketHeaderLen:]
	if len(inline) < pageHeaderSize || order.Uint16(inline[8:]) != leafPageFlag || order.Uint32(inline[12:]) != 0 {
		return fmt.Errorf("%w: page %d: malformed inline bucket", ErrCorrupt, id)
	}
	if depth+1 > maxDepth {
		return fmt.Errorf("%w: buckets nested deeper than %d", ErrCorrupt, maxDepth)
	}
	return v.leaf(inline, id, nil, nil, depth+1)
}

type leafValue struct {
	data   []byte
	bucket bool
}

// leafElements returns the keys and values of leaf page p, each checked to
// lie inside p.
func leafElements(p []byte, id uint64) ([][]byte, []leafValue, error) {
	count := int(order.Uint16(p[10:]))
	if pageHeaderSize+count*elementSize > len(p) {
		return nil, nil, fmt.Errorf("%w: page %d: %d elements do not fit", ErrCorrupt, id, count)
	}
	keys := make([][]byte, count)
	values := make([]leafValue, count)
	for i := range count {
		e := pageHeaderSize + i*elementSize
		flags := order.Uint32(p[e:])
		start := uint64(e) + uint64(order.Uint32(p[e+4:]))
		kEnd := start + uint64(order.Uint32(p[e+8:]))
		vEnd := kEnd + uint64(order.Uint32(p[e+12:]))
		if vEnd > uint64(len(p)) || flags&^bucketLeafFlag != 0 {
			return nil, nil, fmt.Errorf("%w: page %d: element %d is malformed", ErrCorrupt, id, i)
		}
		keys[i] = p[start:kEnd]
		values[i] = leafValue{data: p[kEnd:vEnd], bucket: flags&bucketLeafFlag != 0}
	}
	return keys, values, nil
}

// branchElements returns the keys and child page ids of branch page p, each key
// checked to lie inside p.
func branchElements(p []byte, id uint64) ([][]byte, []uint64, error) {
	count := int(order.Uint16(p[10:]))
	if pageHeaderSize+count*elementSize > len(p) {
		return nil, nil, fmt.Errorf("%w: page %d: %d elements do not fit", ErrCorrupt, id, count)
	}
	keys := make([][]byte, count)
	children := make([]uint64, count)
	for i := range count {
		e := pageHeaderSize + i*elementSize
		start := uint64(e) + uint64(order.Uint32(p[e:]))
		end := start + uint64(order.Uint32(p[e+4:]))
		if end > uint64(len(p)) {
			return nil, nil, fmt.Errorf("%w: page %d: element %d is malformed", ErrCorrupt, id, i)
		}
		keys[i] = p[start:end]
		children[i] = order.Uint64(p[e+8:])
	}
	return keys, children, nil
}

// inOrder checks that keys are strictly increasing and lie in [lo, hi).
func inOrder(keys [][]byte, lo, hi []byte, id uint64) error {
	for i, k := range keys {
		if (i > 0 && bytes.Compare(keys[i-1], k) >= 0) || (i == 0 && lo != nil && bytes.Compare(k, lo) < 0) ||
			(hi != nil && bytes.Compare(k, hi) >= 0) {
			return fmt.Errorf("%w: page %d: key %d out of order", ErrCorrupt, id, i)
		}
	}
	return nil
}

// freelist checks the freelist page id: every free page is below the
// high-water mark, listed once and not in use.
func (v *verifier) freelist(id uint64) error {
	p, err := v.page(id, freelistPageFlag)
	if err != nil {
		return err
	}
	data := p[pageHeaderSize:]
	count := uint64(order.Uint16(p[10:]))
	if count == 0xFFFF {
		if len(data) < 8 {
			return fmt.Errorf("%w: freelist page %d is malformed", ErrCorrupt, id)
		}
		count, data = order.Uint64(data), data[8:]
	}
	if count > uint64(len(data)/8) {
		return fmt.Errorf("%w: freelist page %d lists %d pages, it has room for %d", ErrCorrupt, id, count, len(data)/8)
	}
	for i := range count {
		free := order.Uint64(data[i*8:])
		if free < 2 || free >= v.hwm || v.reached[free] {
			return fmt.Errorf("%w: freelist page %d lists page %d, which is out of range, in use or listed twice", ErrCorrupt, id, free)
		}
		v.reached[free] = true
	}
	return nil
}
