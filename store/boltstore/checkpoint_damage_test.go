package boltstore_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/boltstore"
	"github.com/converge-go/converge/store/checkpoint"
)

// buildCheckpointFixture writes a real checkpoint file of a few pages (a
// value larger than a page, objects over several leaves, pages freed by
// later writes) and returns its bytes and the state it holds.
func buildCheckpointFixture(t *testing.T) ([]byte, checkpoint.State[*item]) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "fixture.db")
	cp := openCheckpoint(t, path)
	seen := time.Unix(1_800_000_000, 0)
	b := checkpoint.Batch[*item]{Identity: "bolt:FIXTURE", Prefix: "app/", Revision: 40, Seen: seen, Replace: true,
		Put: []store.Object[*item]{{Key: "app/big", Value: &item{S: strings.Repeat("big", 2000)}, Revision: 3, CreateRevision: 2}}}
	for i := range 60 {
		b.Put = append(b.Put, cpObject(fmt.Sprintf("app/%02d", i), int64(5+i%30), 100+i))
	}
	mustNot(t, cp.Write(b))
	for round := range 3 {
		rev := int64(41 + round)
		d := checkpoint.Batch[*item]{Identity: "bolt:FIXTURE", Prefix: "app/", Revision: rev, Seen: seen.Add(time.Duration(round) * time.Second)}
		for i := round; i < 60; i += 7 {
			d.Put = append(d.Put, cpObject(fmt.Sprintf("app/%02d", i), rev, 1000*round+i))
		}
		d.Delete = []string{fmt.Sprintf("app/%02d", 50+round)}
		mustNot(t, cp.Write(d))
	}
	want, err := cp.Load()
	mustNot(t, err)
	mustNot(t, cp.Close())
	data, err := os.ReadFile(path)
	mustNot(t, err)
	return data, want
}

// A checkpoint file damaged anywhere (truncated at every page boundary and
// in the middle of every page, emptied, a byte changed at several offsets
// of every page it uses: the damages of the store's own suite) is
// detected: OpenCheckpoint sets a file bbolt cannot read aside and Load
// reports checkpoint.ErrDamaged, or Load finds the damage itself; a Load
// that succeeds returns exactly the state written (the damage hit bytes
// that carry nothing). Never a panic, never another state. A damaged
// checkpoint is written afresh by the next whole batch.
func TestADamagedCheckpointFileIsDetected(t *testing.T) {
	data, want := buildCheckpointFixture(t)
	dir := t.TempDir()
	var setAside, foundByLoad, harmless int
	for i, d := range damages(data) {
		path := filepath.Join(dir, fmt.Sprintf("damaged-%d.db", i))
		mustNot(t, os.WriteFile(path, d.make(), 0o600))
		cp, err := openCheckpointNoPanic(path)
		if err != nil {
			t.Errorf("%s: OpenCheckpoint: %v", d.name, err)
			continue
		}
		got, err := loadNoPanic(cp)
		_, asideErr := os.Stat(path + ".damaged")
		switch {
		case err != nil && !errors.Is(err, checkpoint.ErrDamaged):
			t.Errorf("%s: Load: %v, want ErrDamaged", d.name, err)
		case err != nil && asideErr == nil:
			setAside++
		case err != nil:
			foundByLoad++
		case d.mustFailOpen:
			t.Errorf("%s: a file that lost pages it needs was read as a checkpoint", d.name)
		case !sameState(got, want):
			t.Errorf("%s: Load returned another state:\ngot  %s\nwant %s", d.name, describeState(got), describeState(want))
		default:
			harmless++
		}
		if err != nil {
			// Written afresh by a whole batch.
			fresh := checkpoint.Batch[*item]{Revision: 1, Seen: want.Seen, Replace: true, Put: []store.Object[*item]{cpObject("a", 1, 1)}}
			if werr := cp.Write(fresh); werr != nil {
				t.Errorf("%s: a whole batch over the damage: %v", d.name, werr)
			} else if _, lerr := cp.Load(); lerr != nil {
				t.Errorf("%s: Load after a whole batch: %v", d.name, lerr)
			}
		}
		mustNot(t, cp.Close())
		_ = os.Remove(path)
		_ = os.Remove(path + ".damaged")
	}
	t.Logf("checkpoint of %d pages of %d bytes: %d damaged files set aside at Open, %d found damaged by Load, %d held the state written",
		len(data)/int(binary.NativeEndian.Uint32(data[24:])), binary.NativeEndian.Uint32(data[24:]), setAside, foundByLoad, harmless)
	if setAside == 0 || foundByLoad == 0 {
		t.Errorf("the suite did not reach both kinds of detection")
	}
}

// openCheckpointNoPanic opens the checkpoint at path, reporting a panic as
// an error.
func openCheckpointNoPanic(path string) (cp *boltstore.Checkpoint[*item], err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("OpenCheckpoint panicked: %v", p)
		}
	}()
	return boltstore.OpenCheckpoint[*item](path)
}

// loadNoPanic loads cp, reporting a panic as an error that matches
// nothing the test accepts.
func loadNoPanic(cp *boltstore.Checkpoint[*item]) (st checkpoint.State[*item], err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("Load panicked: %v", p)
		}
	}()
	return cp.Load()
}
