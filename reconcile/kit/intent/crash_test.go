package intent_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile/kit/intent"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
	"github.com/converge-go/converge/store/httpstore"
)

const (
	// stepperEnv holds "URL LOGFILE" and marks the test binary as the
	// crash test's child (see TestMain).
	stepperEnv = "INTENT_STEPPER"
	// crashCyclesEnv overrides the number of kill cycles.
	crashCyclesEnv = "INTENT_CRASH_CYCLES"
	crashTasks     = 6
)

// logWorld is the crash test's world: an act appends "ID RESULT" to a log
// file in one write, and Find reads the log. It does not deduplicate: a
// second act under one ID would show as a second line.
type logWorld struct{ path string }

// resultOf is the result an act under id has: "fail" for a third of IDs.
func resultOf(id string) string {
	h := fnv.New32a()
	h.Write([]byte(id))
	if h.Sum32()%3 == 0 {
		return "fail"
	}
	return "ok"
}

func (w logWorld) Find(_ context.Context, id string) (intent.Found[string], error) {
	acts, err := readActs(w.path)
	if err != nil {
		return intent.Found[string]{}, err
	}
	if res, ok := acts[id]; ok {
		return intent.Found[string]{State: intent.Finished, Result: res[0]}, nil
	}
	return intent.Found[string]{}, nil
}

func (w logWorld) Act(_ context.Context, id string) (intent.Found[string], error) {
	f, err := os.OpenFile(w.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return intent.Found[string]{}, err
	}
	res := resultOf(id)
	_, err = f.WriteString(id + " " + res + "\n") // one write: whole or not at all
	if err = errors.Join(err, f.Close()); err != nil {
		return intent.Found[string]{}, err
	}
	say("acted", id)
	return intent.Found[string]{State: intent.Finished, Result: res}, nil
}

// readActs reads the log: the results of the acts under each ID, in order.
func readActs(path string) (map[string][]string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return map[string][]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	acts := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if id, res, ok := strings.Cut(line, " "); ok {
			acts[id] = append(acts[id], res)
		}
	}
	return acts, nil
}

// say prints one line of the stepper's progress: the parent counts them
// to choose when to kill it.
func say(what ...any) {
	if _, err := fmt.Fprintln(os.Stdout, what...); err != nil {
		os.Exit(1) // the parent is gone
	}
}

// stepper is the crash test's child: it steps every task of the store
// served at url, over the world of the log file, until all are settled
// (or it is killed), printing each write, act and step. A conflict (the
// parent changed a spec) is taken up at the next round.
func stepper(url, log string) int {
	ctx := context.Background()
	c, err := httpstore.New[*task](url)
	if err != nil {
		fmt.Fprintln(os.Stderr, "stepper:", err)
		return 2
	}
	w := logWorld{path: log}
	o := once(newWorld())
	o.Find, o.Act = w.Find, w.Act
	write := o.Write
	o.Write = func(ctx context.Context, s store.Store[*task], obj store.Object[*task], rec intent.Record[string]) (store.Object[*task], error) {
		written, err := write(ctx, s, obj, rec)
		if err == nil {
			say("wrote", rec.ID, rec.Done)
		}
		return written, err
	}
	for {
		objs, _, err := c.List(ctx, "tasks/")
		if err != nil {
			fmt.Fprintln(os.Stderr, "stepper:", err)
			return 2
		}
		settled := true
		for _, obj := range objs {
			out, err := o.Step(ctx, c, obj)
			if err != nil && !errors.Is(err, store.ErrConflict) {
				fmt.Fprintln(os.Stderr, "stepper:", obj.Key, err)
				return 2
			}
			say("step", obj.Key, fmt.Sprint(out.Decisions))
			settled = settled && err == nil && out.Settled()
		}
		if settled {
			say("idle")
			return 0
		}
	}
}

// TestSIGKILLedStepperActsAtMostOncePerIntentAndRecordsEveryResult runs a
// child process (this test binary) that steps tasks through Once over a
// store served by this process (the API-server layer over memory), acting by appending to a log file, and
// kills it with SIGKILL after a random number of its writes, acts and
// steps, over many cycles, while this process changes specs (new
// generations) under it; a last child runs to the end. Then: no ID was
// acted on twice; every act had its intent recorded first and its result
// recorded afterwards, the one the world kept; every task ends settled at
// its generation; and the kills hit recorded intents (some attempts were
// judged or acted on after a restart).
func TestSIGKILLedStepperActsAtMostOncePerIntentAndRecordsEveryResult(t *testing.T) {
	cycles := 150
	if testing.Short() {
		cycles = 20
	}
	if v := os.Getenv(crashCyclesEnv); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err)
		cycles = n
	}
	ctx := t.Context()
	raw := store.NewMemory[*task]()
	defer raw.Close()
	mem, err := apistore.New[*task](raw, resource.Kind[taskSpec, taskStatus]{})
	require.NoError(t, err)
	h, err := httpstore.NewHandler[*task](mem)
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	defer srv.Close()
	history := watchRecords(t, mem)
	for i := range crashTasks {
		_, err := resource.PutSpec(ctx, mem, fmt.Sprintf("tasks/t%d", i), taskSpec{N: 0})
		require.NoError(t, err)
	}
	log := filepath.Join(t.TempDir(), "acts.log")
	rng := rand.New(rand.NewPCG(uint64(os.Getpid()), 11))
	var steps []string
	killed := 0
	for cycle := range cycles {
		got, wasKilled := runStepper(t, srv.URL, log, 1+rng.IntN(15), func() {
			if rng.IntN(6) == 0 { // a new generation of a task, under the child's feet
				_, err := resource.PutSpec(ctx, mem, fmt.Sprintf("tasks/t%d", rng.IntN(crashTasks)), taskSpec{N: 1 + cycle})
				require.NoError(t, err)
			}
		})
		steps = append(steps, got...)
		if wasKilled {
			killed++
		}
	}
	for range 3 { // to the end, unkilled
		got, _ := runStepper(t, srv.URL, log, 0, func() {})
		steps = append(steps, got...)
	}
	checkCrashRun(t, mem, log, history())
	judged, resumed := 0, 0
	for _, s := range steps {
		judged += strings.Count(s, "Judge")
		if strings.HasPrefix(s, "step ") && strings.HasSuffix(s, "[Act]") {
			resumed++
		}
	}
	t.Logf("%d cycles, %d kills; after restarts %d attempts judged, %d recorded intents acted on", cycles, killed, judged, resumed)
	require.Positive(t, killed, "no child was killed: the test proved nothing")
	require.Positive(t, judged+resumed, "no kill left a pending intent: the test proved nothing")
}

// runStepper runs a stepper and SIGKILLs it once it has printed killAfter
// lines (0: never), calling each after each line. It returns the lines
// and whether it killed the child; a child that ends by itself must have
// settled every task.
func runStepper(t *testing.T, url, log string, killAfter int, each func()) ([]string, bool) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), stepperEnv+"="+url+" "+log)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	var lines []string
	r := bufio.NewReader(stdout)
	for {
		line, err := r.ReadString('\n')
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		lines = append(lines, strings.TrimSuffix(line, "\n"))
		each()
		if len(lines) == killAfter {
			require.NoError(t, cmd.Process.Kill())
		}
	}
	err = cmd.Wait()
	if killAfter == 0 || len(lines) < killAfter {
		require.NoError(t, err, "the stepper failed")
		require.Equal(t, "idle", lines[len(lines)-1])
		return lines, false
	}
	return lines, true
}

// watchRecords collects the record the store holds at each of its
// changes, with the key, until the test ends; the returned function waits
// until it has seen every change made so far and returns them.
func watchRecords(t *testing.T, s store.Store[*task]) func() []keyRecord {
	t.Helper()
	w, err := s.Watch(t.Context(), "tasks/", 0)
	require.NoError(t, err)
	t.Cleanup(w.Stop)
	var mu sync.Mutex
	var seen []keyRecord
	var last int64
	changed := make(chan struct{}, 1)
	go func() {
		for ev := range w.Events() {
			mu.Lock()
			if ev.Object.Value != nil {
				seen = append(seen, keyRecord{ev.Object.Key, ev.Object.Value.Status.Run})
			}
			last = ev.Object.Revision
			mu.Unlock()
			select {
			case changed <- struct{}{}:
			default:
			}
		}
	}()
	return func() []keyRecord {
		rev, err := s.Revision(t.Context())
		require.NoError(t, err)
		for {
			mu.Lock()
			if last >= rev {
				defer mu.Unlock()
				return append([]keyRecord(nil), seen...)
			}
			mu.Unlock()
			<-changed
		}
	}
}

type keyRecord struct {
	key string
	rec intent.Record[string]
}

// checkCrashRun checks the crash test's end: the log of acts against the
// records the store held at each change, and the tasks as they are.
func checkCrashRun(t *testing.T, s store.Store[*task], log string, history []keyRecord) {
	t.Helper()
	acts, err := readActs(log)
	require.NoError(t, err)
	intents := map[string]intent.Record[string]{} // recorded pending, by ID
	results := map[string]intent.Record[string]{} // recorded done, by ID
	for _, kr := range history {
		switch rec := kr.rec; {
		case rec.ID == "":
		case rec.Done:
			if prev, ok := results[rec.ID]; ok {
				require.Equal(t, prev.Result, rec.Result, "%s: two results recorded for %s", kr.key, rec.ID)
			}
			results[rec.ID] = rec
		default:
			intents[rec.ID] = rec
		}
	}
	for id, res := range acts {
		require.Len(t, res, 1, "acted on %s %d times", id, len(res))
		require.Contains(t, intents, id, "acted on %s without its intent recorded", id)
		require.Contains(t, results, id, "the result of %s, which the world kept, was never recorded", id)
		require.Equal(t, res[0], results[id].Result, "the result of %s is not the one the world kept", id)
	}
	for id := range intents {
		require.Contains(t, results, id, "the intent %s was never settled", id)
	}
	for id := range results {
		require.Contains(t, acts, id, "a result recorded for %s, on which nothing acted", id)
	}
	checkAttempts(t, results)

	objs, _, err := s.List(t.Context(), "tasks/")
	require.NoError(t, err)
	require.Len(t, objs, crashTasks)
	for _, obj := range objs {
		rec := obj.Value.Status.Run
		require.True(t, rec.Done, "%s: not settled: %+v", obj.Key, rec)
		require.Equal(t, obj.Value.Generation, rec.Generation, "%s: settled at another generation", obj.Key)
		require.True(t, rec.Result == "ok" || rec.Attempt == 3, "%s: failed with retries left: %+v", obj.Key, rec)
	}
}

// checkAttempts checks that the attempts of each generation of each task
// are numbered from 1 without a gap, and that each but the last failed: an
// attempt begins only once the one before is judged a failure.
func checkAttempts(t *testing.T, results map[string]intent.Record[string]) {
	t.Helper()
	type gen struct {
		task string
		gen  int64
	}
	byGen := map[gen]map[int]string{}
	for id, rec := range results {
		g := gen{task: id[:strings.Index(id, ".c")], gen: rec.Generation}
		if byGen[g] == nil {
			byGen[g] = map[int]string{}
		}
		byGen[g][rec.Attempt] = rec.Result
	}
	for g, attempts := range byGen {
		for n := 1; n <= len(attempts); n++ {
			res, ok := attempts[n]
			require.True(t, ok, "%+v: attempts %v have a gap at %d", g, attempts, n)
			if n < len(attempts) {
				require.Equal(t, "fail", res, "%+v: attempt %d succeeded and another followed", g, n)
			}
		}
	}
}
