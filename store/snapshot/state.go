package snapshot

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/converge-go/converge/store"
)

// FileName is the name a Saver gives the snapshot of revision rev taken
// at t: "snapshot-TIME-rREVISION.snap". Other savers of a directory
// (store/changelog's Shipper) name theirs so too.
func FileName(rev int64, t time.Time) string {
	return fmt.Sprintf("snapshot-%s-r%d%s", t.UTC().Format("20060102T150405.000000000Z"), rev, Ext)
}

// Files returns the snapshot files of dir whose header reads (not
// checked whole), by revision from the highest, and those whose header
// does not: what Latest chooses from.
func Files(dir string) ([]File, []Skipped, error) {
	return candidates(dir)
}

// State returns the Source of a state held in memory: the objects objs
// (in any order) of the store whose identity is identity, at revision
// rev, as a replay of a change log builds it (store/changelog). Saved
// (Save), it reads back as those objects, so that a restore
// (boltstore.Restore, etcdstore.Restore) takes it as any snapshot. Its
// capture refuses, with an error matching store.ErrInvalid, two objects of
// one key and an object Read would refuse (a bad key, a nil value,
// revisions out of 1 <= CreateRevision <= Revision <= rev).
func State(identity string, rev int64, objs []store.Object[[]byte]) Source {
	return state{identity: identity, rev: rev, objects: objs}
}

type state capture

func (s state) capture(context.Context) (capture, error) {
	objs := slices.Clone(s.objects)
	slices.SortFunc(objs, func(a, b store.Object[[]byte]) int { return strings.Compare(a.Key, b.Key) })
	prev := ""
	for _, o := range objs {
		if err := checkObject(prev, o, s.rev); err != nil {
			return capture{}, fmt.Errorf("snapshot: %w: %v", store.ErrInvalid, err)
		}
		if len(o.Value) > MaxValueSize {
			return capture{}, fmt.Errorf("snapshot: %w: the value of %q has %d bytes, more than MaxValueSize", store.ErrInvalid, o.Key, len(o.Value))
		}
		prev = o.Key
	}
	return capture{identity: s.identity, rev: s.rev, objects: objs}, nil
}

func (s state) revision(context.Context) (int64, string, error) { return s.rev, s.identity, nil }
