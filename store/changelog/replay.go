package changelog

import (
	"errors"
	"fmt"
	"strings"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/snapshot"
)

// replay returns the objects of the state at p.Revision, in epoch ep
// (index e): the chosen snapshot's, and the records after it applied.
func (a Archive) replay(segs []segment, ep epoch, e int, p *Point) ([]store.Object[[]byte], error) {
	found, err := a.base(p.Identity, ep, p.Revision)
	if err != nil {
		return nil, err
	}
	info, objs, err := snapshot.ReadFile(found.Path)
	if err != nil {
		return nil, err
	}
	p.Snapshot, p.SnapshotRevision = found.Path, info.Revision
	state := make(map[string]store.Object[[]byte], len(objs))
	for _, o := range objs {
		state[o.Key] = o
	}
	stop := errors.New("stop")
	w := walkLog(segs, func(i int, r Record) error {
		switch {
		case i < e || r.Revision <= info.Revision:
			return nil
		case i > e || r.Revision > p.Revision:
			return stop
		case r.Op == Put:
			state[r.Key] = store.Object[[]byte]{Key: r.Key, Value: r.Value, Revision: r.Revision, CreateRevision: r.CreateRevision}
		default:
			delete(state, r.Key)
		}
		p.Records++
		return nil
	})
	if w.end != nil && w.end != stop && !errors.Is(w.end, ErrTorn) {
		return nil, w.end
	}
	out := make([]store.Object[[]byte], 0, len(state))
	for _, o := range state {
		out = append(out, o)
	}
	return out, nil
}

// base returns the snapshot of identity with the highest revision from
// ep.start to rev, of every snapshot directory.
func (a Archive) base(identity string, ep epoch, rev int64) (snapshot.Found, error) {
	dirs := a.SnapshotDirs
	if len(dirs) == 0 {
		dirs = []string{a.Dir}
	}
	var best snapshot.Found
	var errs []error
	for _, dir := range dirs {
		found, err := snapshot.LatestAtMost(dir, identity, rev)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if best.Path == "" || found.Info.Revision > best.Info.Revision {
			best = found
		}
	}
	if best.Path == "" || best.Info.Revision < ep.start {
		err := fmt.Errorf("changelog: %w from revision %d (where the log of the point's epoch starts) to %d in %s",
			snapshot.ErrNoSnapshot, ep.start, rev, strings.Join(dirs, ", "))
		return snapshot.Found{}, errors.Join(append([]error{err}, errs...)...)
	}
	return best, nil
}
