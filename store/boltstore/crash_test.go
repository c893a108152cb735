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
	"sync"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/boltstore"
)

const (
	// crashHelperEnv names the file the crash writer writes to; it marks
	// the test binary as the crash test's child.
	crashHelperEnv = "BOLTSTORE_CRASH_HELPER"
	// crashCyclesEnv overrides the number of kill cycles.
	crashCyclesEnv = "BOLTSTORE_CRASH_CYCLES"
	// lockHelperEnv names the file the lock helper tries to open.
	lockHelperEnv = "BOLTSTORE_LOCK_HELPER"

	crashWriters = 4
	crashKeys    = 5   // keys per writer
	crashHistory = 300 // small, so that trimming runs across crashes
)

// ack is a write the crash writer acknowledged: op is c, u or d.
type ack struct {
	op  string
	key string
	n   int
	rev int64
}

// crashWriter is the child process of
// TestKilledWriterLosesNoAcknowledgedWriteAndLeavesAConsistentHistory, run
// by TestMain: several goroutines write to the store at path until the
// process is killed, printing each write once the store has acknowledged
// it. Any error ends the process at once with status 2, so that the parent
// sees it exit before the kill.
func crashWriter(path string) int {
	s, err := boltstore.Open[*item](path, boltstore.WithHistory(crashHistory))
	if err != nil {
		fmt.Fprintln(os.Stderr, "crash writer:", err)
		return 2
	}
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "crash writer:", err)
		os.Exit(2)
	}
	var out sync.Mutex
	print := func(a ack) {
		out.Lock()
		defer out.Unlock()
		// One write per line: a pipe takes it whole or not at all.
		if _, err := fmt.Fprintf(os.Stdout, "%s %s %d %d\n", a.op, a.key, a.n, a.rev); err != nil {
			os.Exit(1) // the parent is gone
		}
	}
	var wg sync.WaitGroup
	for g := range crashWriters {
		wg.Go(func() {
			ctx := context.Background()
			for seq := 0; ; seq++ {
				key := fmt.Sprintf("g%d/k%d", g, seq%crashKeys)
				n := g*1_000_000_000 + seq + int(rand.Uint32()%1000)*1_000_000
				cur, err := s.Get(ctx, key)
				switch {
				case errors.Is(err, store.ErrNotFound):
					obj, err := s.Create(ctx, key, &item{N: n})
					if err != nil {
						fail(err)
					}
					print(ack{"c", key, n, obj.Revision})
				case err != nil:
					fail(err)
				case seq%7 == 0:
					rev, err := s.Delete(ctx, key, cur.Revision)
					if err != nil {
						fail(err)
					}
					print(ack{"d", key, -1, rev})
				default:
					obj, err := s.Update(ctx, key, &item{N: n}, cur.Revision)
					if err != nil {
						fail(err)
					}
					print(ack{"u", key, n, obj.Revision})
				}
			}
		})
	}
	wg.Wait()
	return 0 // unreachable: the writers run until killed or failed
}

// A writing process killed with SIGKILL at random points loses no write it
// acknowledged: after each kill the reopened file holds every acknowledged
// write (or a later one), each at its own revision, and the revision
// counter, the history and the objects agree.
func TestKilledWriterLosesNoAcknowledgedWriteAndLeavesAConsistentHistory(t *testing.T) {
	cycles := 50
	if testing.Short() {
		cycles = 5
	}
	if v := os.Getenv(crashCyclesEnv); v != "" {
		n, err := strconv.Atoi(v)
		mustNot(t, err)
		cycles = n
	}
	path := filepath.Join(t.TempDir(), "crash.db")
	rng := rand.New(rand.NewPCG(uint64(os.Getpid()), 7))
	var acks []ack
	for cycle := range cycles {
		killAfter := 1 + rng.IntN(200)
		got := runCrashWriter(t, path, killAfter)
		acks = append(acks, got...)
		verifyAfterCrash(t, path, acks)
		if t.Failed() {
			t.Fatalf("cycle %d: killed after %d acknowledged writes", cycle, len(got))
		}
	}
	t.Logf("%d kill cycles, %d acknowledged writes", cycles, len(acks))
}

// runCrashWriter starts the writer, kills it once it has acknowledged
// killAfter writes, and returns every write it acknowledged before it died.
func runCrashWriter(t *testing.T, path string, killAfter int) []ack {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), crashHelperEnv+"="+path)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	mustNot(t, err)
	mustNot(t, cmd.Start())
	var acks []ack
	r := bufio.NewReader(stdout)
	for {
		line, err := r.ReadString('\n')
		if errors.Is(err, io.EOF) {
			break // a line cut short by the kill was not acknowledged
		}
		mustNot(t, err)
		var a ack
		if _, err := fmt.Sscan(line, &a.op, &a.key, &a.n, &a.rev); err != nil {
			t.Fatalf("writer printed %q: %v", line, err)
		}
		acks = append(acks, a)
		if len(acks) == killAfter {
			mustNot(t, cmd.Process.Kill())
		}
	}
	err = cmd.Wait()
	if len(acks) < killAfter {
		t.Fatalf("writer exited after %d writes before it was killed: %v", len(acks), err)
	}
	return acks
}

// verifyAfterCrash opens the store and checks it against every write
// acknowledged so far.
func verifyAfterCrash(t *testing.T, path string, acks []ack) {
	t.Helper()
	s, err := boltstore.Open[*item](path, boltstore.WithHistory(crashHistory))
	if err != nil {
		t.Fatalf("reopen after kill: %v", err)
	}
	defer s.Close()
	ctx := t.Context()
	rev, err := s.Revision(ctx)
	mustNot(t, err)

	// Every acknowledged write took its own revision, at most the counter.
	latest := map[string]ack{}
	byRev := map[int64]ack{}
	for _, a := range acks {
		if prev, dup := byRev[a.rev]; dup {
			t.Fatalf("revision %d acknowledged twice: %v and %v", a.rev, prev, a)
		}
		byRev[a.rev] = a
		if a.rev > rev {
			t.Fatalf("acknowledged revision %d is beyond the store's revision %d", a.rev, rev)
		}
		if a.rev > latest[a.key].rev {
			latest[a.key] = a
		}
	}

	// The history spans exactly the last crashHistory revisions, and holds
	// every acknowledged write within them.
	from := max(0, rev-crashHistory)
	if from > 0 {
		if _, err := s.Watch(ctx, "", from-1); !errors.Is(err, store.ErrCompacted) {
			t.Fatalf("Watch after %d: %v, want ErrCompacted", from-1, err)
		}
	}
	w, err := s.Watch(ctx, "", from)
	mustNot(t, err)
	defer w.Stop()
	lastEvent := map[string]store.Event[*item]{}
	for want := from + 1; want <= rev; want++ {
		ev := nextEvent(t, w)
		if ev.Object.Revision != want {
			t.Fatalf("history has revision %d where %d was due", ev.Object.Revision, want)
		}
		lastEvent[ev.Object.Key] = ev
		a, ok := byRev[want]
		if !ok {
			continue
		}
		wantType := map[string]store.EventType{"c": store.Created, "u": store.Updated, "d": store.Deleted}[a.op]
		if ev.Object.Key != a.key || ev.Type != wantType || (a.op != "d" && ev.Object.Value.N != a.n) {
			t.Fatalf("history at %d: %v %s=%d, acknowledged %v", want, ev.Type, ev.Object.Key, ev.Object.Value.N, a)
		}
	}

	// Each key holds its last acknowledged write or a later one, and agrees
	// with the last event of the history.
	for key, a := range latest {
		obj, err := s.Get(ctx, key)
		switch {
		case errors.Is(err, store.ErrNotFound):
			// Gone: acknowledged deleted, or deleted since by a write
			// that committed just before the kill, unacknowledged.
			if ev, ok := lastEvent[key]; a.op != "d" && !(ok && ev.Type == store.Deleted && ev.Object.Revision > a.rev) {
				t.Fatalf("acknowledged %v is missing", a)
			}
		case err != nil:
			t.Fatal(err)
		case obj.Revision < a.rev:
			t.Fatalf("%s is at revision %d, before its acknowledged write %v", key, obj.Revision, a)
		case obj.Revision == a.rev && obj.Value.N != a.n:
			t.Fatalf("%s=%d at revision %d, acknowledged %v", key, obj.Value.N, obj.Revision, a)
		}
		if ev, ok := lastEvent[key]; ok {
			deleted := errors.Is(err, store.ErrNotFound)
			if deleted != (ev.Type == store.Deleted) || (!deleted && (obj.Revision != ev.Object.Revision || obj.Value.N != ev.Object.Value.N)) {
				t.Fatalf("%s: object %+v disagrees with its last history event %v %+v", key, obj, ev.Type, ev.Object)
			}
		}
	}
}
