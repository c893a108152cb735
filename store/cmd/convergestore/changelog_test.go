package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/changelog/changelogtest"
	"github.com/converge-go/converge/store/snapshot/snapshottest"
)

// sameSpec reports whether got, a value the server gives back, holds the
// spec of want, a value written.
func sameSpec(want, got raw) bool {
	var w, g struct{ Spec any }
	return json.Unmarshal(want, &w) == nil && json.Unmarshal(got, &g) == nil && reflect.DeepEqual(w.Spec, g.Spec)
}

// TestAWriteAcknowledgedBeforeTheDiskWasLostIsRestored: clients load a
// server that ships its changes with -log-dir; mid-load the server is
// killed (SIGKILL) and its store file deleted; a server started with
// -restore-from the log serves every write acknowledged more than a
// second before the kill, with its value, under a new identity.
func TestAWriteAcknowledgedBeforeTheDiskWasLostIsRestored(t *testing.T) {
	recoveryPoint(t)
}

// recoveryPoint runs the load, the kill and the restore once, and returns
// the age at the kill of the oldest acknowledged write lost.
func recoveryPoint(t *testing.T) time.Duration {
	t.Helper()
	logDir, snaps := filepath.Join(t.TempDir(), "log"), filepath.Join(t.TempDir(), "snapshots")
	a := start(t, t.TempDir(), "-log-dir", logDir, "-snapshot-dir", snaps)
	c := client[raw](t, a.url, a.token(t))
	id, err := c.Identity(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	ctx, stopLoad := context.WithCancel(t.Context())
	loaded := make(chan []changelogtest.Acked[raw], 1)
	go func() {
		loaded <- changelogtest.Load(ctx, c, 8, func(key string) raw { return raw(fmt.Sprintf(`{"spec":{"key":%q}}`, key)) })
	}()
	<-time.After(2 * time.Second) // real time: the load runs

	killed := time.Now()
	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	a.wait(t)
	if err := os.Remove(filepath.Join(a.dir, StoreFile)); err != nil {
		t.Fatal(err)
	}
	stopLoad()
	acked := <-loaded

	dir := t.TempDir()
	b := start(t, dir, "-restore-from", logDir, "-snapshot-dir", snaps, "-log-dir", logDir)
	if !strings.Contains(b.stdout.String(), "from the change log "+logDir) {
		t.Errorf("no word of the restore:\n%s", b.stdout)
	}
	rc := client[raw](t, b.url, b.token(t))
	objs, _, err := rc.List(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	if restored, err := rc.Identity(t.Context()); err != nil || restored == id {
		t.Errorf("identity %q after the restore, the old store's %q (%v)", restored, id, err)
	}
	b.stop(t)
	return changelogtest.RequireRecoveryPoint(t, acked, killed, time.Second, objs, sameSpec)
}

// TestRestoreFromALogServesTheStateAtTheRevisionOrTimeAsked: a server
// restored with -restore-from its -log-dir and -restore-to-revision R
// serves exactly the objects the store held at R; with -restore-to-time
// after the last change, the last state; a point the log does not cover,
// and a revision asked of a snapshot file, are refused (exit 1) and make
// no store.
func TestRestoreFromALogServesTheStateAtTheRevisionOrTimeAsked(t *testing.T) {
	logDir := filepath.Join(t.TempDir(), "log")
	a := start(t, t.TempDir(), "-log-dir", logDir)
	c := client[raw](t, a.url, a.token(t))
	states := map[int64][]store.Object[raw]{}
	var revs []int64
	for i := range 12 {
		key := fmt.Sprintf("app/%02d", i%5)
		var err error
		if obj, gerr := c.Get(t.Context(), key); gerr == nil && i%3 == 0 {
			_, err = c.Delete(t.Context(), key, obj.Revision)
		} else if gerr == nil {
			_, err = c.Update(t.Context(), key, raw(fmt.Sprintf(`{"spec":{"n":%d}}`, i)), obj.Revision)
		} else {
			_, err = c.Create(t.Context(), key, raw(fmt.Sprintf(`{"spec":{"n":%d}}`, i)))
		}
		if err != nil {
			t.Fatal(err)
		}
		objs, rev, err := c.List(t.Context(), "")
		if err != nil {
			t.Fatal(err)
		}
		states[rev], revs = objs, append(revs, rev)
	}
	a.stop(t)

	for _, rev := range []int64{revs[3], revs[7], revs[11]} {
		dir := t.TempDir()
		b := start(t, dir, "-restore-from", logDir, "-restore-to-revision", fmt.Sprint(rev))
		got, _, err := client[raw](t, b.url, b.token(t)).List(t.Context(), "")
		if err != nil {
			t.Fatal(err)
		}
		sameObjects(t, got, states[rev])
		b.stop(t)
	}
	b := start(t, t.TempDir(), "-restore-from", logDir, "-restore-to-time", time.Now().UTC().Format(time.RFC3339Nano))
	got, _, err := client[raw](t, b.url, b.token(t)).List(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	sameObjects(t, got, states[revs[11]])
	b.stop(t)

	snap := filepath.Join(t.TempDir(), "s.snap")
	snapshottest.WriteFile(t, snap, snapshottest.Header{Identity: "bolt:A", Revision: 1}, snapshottest.Object("app/a", `{"spec":{}}`, 1))
	for args, want := range map[string]string{
		"-restore-from " + logDir + " -restore-to-time 2000-01-01T00:00:00Z":     "does not cover",
		"-restore-from " + logDir + " -restore-to-revision " + fmt.Sprint(1<<40): "does not cover",
		"-restore-from " + snap + " -restore-to-revision 1":                      "is no directory",
	} {
		dir := t.TempDir()
		r := launch(t, dir, strings.Fields(args)...)
		if code := r.refused(t); code != exitError || !strings.Contains(r.stderr.String(), want) {
			t.Errorf("%s: exit %d, want %d and %q:\n%s", args, code, exitError, want, r.stderr)
		}
		if _, err := os.Stat(filepath.Join(dir, StoreFile)); err == nil {
			t.Errorf("%s: a store file was made", args)
		}
	}
}
