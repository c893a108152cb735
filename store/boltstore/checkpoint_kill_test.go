package boltstore_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/boltstore"
	"github.com/converge-go/converge/store/checkpoint"
)

const (
	// checkpointHelperEnv names the directory of the checkpoint kill
	// test's files; it marks the test binary as that test's child.
	checkpointHelperEnv = "BOLTSTORE_CHECKPOINT_HELPER"
	// checkpointCyclesEnv overrides the number of kill cycles.
	checkpointCyclesEnv = "BOLTSTORE_CHECKPOINT_CYCLES"

	cpKillKeys    = 12        // keys of the controller's view, written in turn
	cpKillHistory = 1_000_000 // every revision of the test, so it can be replayed
	cpKillPrefix  = "view/"
)

// checkpointController is the child process of
// TestAKilledControllersCheckpointIsAStateItsStoreHad, run by TestMain: a
// controller of the store in dir, checkpointed every millisecond into
// dir's checkpoint file, while one goroutine writes the store (creates,
// updates, deletes, inside and outside the controller's view) and prints
// each acknowledged write, until the process is killed. Any error ends it
// at once with status 2.
func checkpointController(dir string) int {
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "checkpoint controller:", err)
		return 2
	}
	s, err := boltstore.Open[*item](filepath.Join(dir, "store.db"), boltstore.WithHistory(cpKillHistory))
	if err != nil {
		return fail(err)
	}
	cp, err := boltstore.OpenCheckpoint[*item](filepath.Join(dir, "checkpoint.db"))
	if err != nil {
		return fail(err)
	}
	rec := reconcile.ReconcilerFunc[*item](func(context.Context, reconcile.Request[*item]) (reconcile.Result, error) {
		return reconcile.Result{}, nil
	})
	c, err := reconcile.New(s, rec, reconcile.Options[*item]{
		Name:       "checkpointed",
		Prefix:     cpKillPrefix,
		Checkpoint: checkpoint.Options[*item]{Store: cp, Interval: time.Millisecond},
	})
	if err != nil {
		return fail(err)
	}
	ctx := context.Background()
	go func() {
		if err := c.Run(ctx); err != nil {
			os.Exit(fail(err))
		}
	}()
	for seq := 0; ; seq++ {
		key := fmt.Sprintf("%sk%d", cpKillPrefix, seq%cpKillKeys)
		if seq%5 == 4 {
			key = fmt.Sprintf("elsewhere/k%d", seq%3)
		}
		n := int(rand.Uint32() % 1_000_000)
		cur, err := s.Get(ctx, key)
		switch {
		case errors.Is(err, store.ErrNotFound):
			_, err = s.Create(ctx, key, &item{N: n})
		case err != nil:
		case seq%7 == 0:
			_, err = s.Delete(ctx, key, cur.Revision)
		default:
			_, err = s.Update(ctx, key, &item{N: n}, cur.Revision)
		}
		if err != nil {
			return fail(err)
		}
		if _, err := fmt.Println("ack"); err != nil {
			return 1 // the parent is gone
		}
	}
}

// A controller's checkpoint file read back after the controller's process
// was killed with SIGKILL at a random moment, while its store changed and
// the checkpoint was written every millisecond, is a state its store had:
// the objects of the view at the checkpoint's revision, each at its own
// revision and creation revision, exactly as the store's history replayed
// to that revision holds them. Between kills the checkpoint moves on.
func TestAKilledControllersCheckpointIsAStateItsStoreHad(t *testing.T) {
	cycles := 50
	if testing.Short() {
		cycles = 5
	}
	if v := os.Getenv(checkpointCyclesEnv); v != "" {
		n, err := strconv.Atoi(v)
		mustNot(t, err)
		cycles = n
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(uint64(os.Getpid()), 11))
	var read, moved int
	var last int64
	for cycle := range cycles {
		killAfter := 20 + rng.IntN(200)
		runCheckpointController(t, dir, killAfter)
		rev, ok := verifyCheckpointAfterKill(t, dir)
		if t.Failed() {
			t.Fatalf("cycle %d: killed after %d acknowledged writes", cycle, killAfter)
		}
		if ok {
			read++
			if rev > last {
				moved++
			}
			last = rev
		}
	}
	t.Logf("%d kill cycles: %d checkpoints read back, %d of them newer than the one before", cycles, read, moved)
	if moved < cycles/2 {
		t.Fatalf("the checkpoint moved on in %d of %d cycles: the test proves little", moved, cycles)
	}
}

// runCheckpointController starts the child and kills it once it has
// acknowledged killAfter writes of the store.
func runCheckpointController(t *testing.T, dir string, killAfter int) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), checkpointHelperEnv+"="+dir)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	mustNot(t, err)
	mustNot(t, cmd.Start())
	acks := 0
	r := bufio.NewReader(stdout)
	for {
		_, err := r.ReadString('\n')
		if errors.Is(err, io.EOF) {
			break
		}
		mustNot(t, err)
		if acks++; acks == killAfter {
			mustNot(t, cmd.Process.Kill())
		}
	}
	err = cmd.Wait()
	if acks < killAfter {
		t.Fatalf("controller exited after %d writes before it was killed: %v", acks, err)
	}
}

// verifyCheckpointAfterKill loads the checkpoint and compares it with the
// store's history replayed to its revision. It returns that revision and
// whether a checkpoint was written yet.
func verifyCheckpointAfterKill(t *testing.T, dir string) (int64, bool) {
	t.Helper()
	cp, err := boltstore.OpenCheckpoint[*item](filepath.Join(dir, "checkpoint.db"))
	mustNot(t, err)
	defer cp.Close()
	st, err := cp.Load()
	if errors.Is(err, checkpoint.ErrNone) {
		return 0, false
	}
	mustNot(t, err)
	if st.Prefix != cpKillPrefix {
		t.Fatalf("checkpoint of prefix %q", st.Prefix)
	}

	s, err := boltstore.Open[*item](filepath.Join(dir, "store.db"), boltstore.WithHistory(cpKillHistory))
	mustNot(t, err)
	defer s.Close()
	ctx := t.Context()
	if id, err := s.Identity(ctx); err != nil || id != st.Identity {
		t.Fatalf("checkpoint of store %q, the store is %q (%v)", st.Identity, id, err)
	}
	rev, err := s.Revision(ctx)
	mustNot(t, err)
	if st.Revision > rev {
		t.Fatalf("checkpoint of revision %d, beyond the store's %d", st.Revision, rev)
	}
	// Every revision of the store, replayed up to the checkpoint's.
	w, err := s.Watch(ctx, "", 0)
	mustNot(t, err)
	defer w.Stop()
	want := map[string]store.Object[*item]{}
	for seen := int64(0); seen < st.Revision; {
		ev := nextEvent(t, w)
		if seen = ev.Object.Revision; seen > st.Revision {
			break
		}
		switch {
		case !strings.HasPrefix(ev.Object.Key, cpKillPrefix):
		case ev.Type == store.Deleted:
			delete(want, ev.Object.Key)
		default:
			want[ev.Object.Key] = ev.Object
		}
	}
	if len(st.Objects) != len(want) {
		t.Fatalf("checkpoint of revision %d holds %d objects, the store held %d then", st.Revision, len(st.Objects), len(want))
	}
	for _, got := range st.Objects {
		w, ok := want[got.Key]
		if !ok || got.Revision != w.Revision || got.CreateRevision != w.CreateRevision || got.Value.N != w.Value.N {
			t.Fatalf("checkpoint of revision %d: %s=%d at %d (created %d); the store had %+v (present %v)",
				st.Revision, got.Key, got.Value.N, got.Revision, got.CreateRevision, w, ok)
		}
	}
	return st.Revision, true
}
