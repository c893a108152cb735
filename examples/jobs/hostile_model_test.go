package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/examples/internal/procs"
	"github.com/converge-go/converge/examples/internal/procstat"
	"github.com/converge-go/converge/internal/syncbuf"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
	"github.com/converge-go/converge/store/httpstore"
)

// The hostile-state model: a token holder writes arbitrary and hostile
// spec and status values into every field of every job, at random, while
// a daemon runs them; then the daemon has changed nothing outside what it
// owns (a canary process lives on, a directory beside its own is as it
// was, its runs directory holds only files named by run IDs it makes),
// each spec no attempt can run ends refused (Failed, "invalid spec") and
// the daemon goes idle: no retry loop.

// hostileStrings are values a token holder tries where a string goes.
var hostileStrings = []string{
	"", "..", "../../outside/victim", "/etc/passwd", "a/b/../../c", "-rf", "\x1b[2J\x1b[31mred", "a\x01b\x7f",
	"<script>alert(1)</script>", "$(touch pwned)", "ünï\u202ecode", strings.Repeat("x", 300),
}

// hostileModel is one run of the model: its daemon, its client, its
// canaries and what it wrote.
type hostileModel struct {
	t        *testing.T
	rng      *rand.Rand
	root     string // holds daemon/, outside/ and tasks/, nothing else
	dir      string // the daemon's
	outside  string // a directory beside it: must stay as it was
	before   map[string]string
	taskLog  string
	exe      string
	canary   int
	ticks    uint64
	c        *httpstore.Client[*Job]
	base     string
	token    string
	backoff  time.Duration
	names    []string          // the keys of the jobs written
	forged   map[string]Status // the status last forged, by key
	forgedAt map[string]int64  // the revision it was written at
	rejected int               // writes the kind's rules refused at the door
}

func TestATokenHolderWritingHostileSpecAndStatusChangesNothingOutsideWhatTheDaemonOwns(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("HOSTILE_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		require.NoError(t, err)
		seed = n
	}
	t.Logf("HOSTILE_SEED=%d", seed)
	m := startHostileModel(t, seed)
	for i := range 10 {
		m.addJob(i)
	}
	m.forgeAll(m.randomStatus)
	m.waitIdle()
	m.check()
	for i, key := range m.names {
		if m.rng.IntN(2) == 0 {
			m.respec(key, i)
		}
	}
	m.forgeAll(m.randomStatus)
	m.waitIdle()
	m.check()
	m.checkList()
	// Last, a status naming the canary as the attempt's process, under the
	// run's own ID, then the deletion: stopping the attempt must not reach it.
	m.forgeAll(func(obj store.Object[*Job]) Status {
		st := m.randomStatus(obj)
		st.Phase, st.PID, st.StartTicks = Running, m.canary, m.ticks
		st.RunID = runID(obj.Key, obj.CreateRevision, st.RunGeneration, st.Attempts)
		return st
	})
	require.NotEmpty(t, m.canaryForged(), "no status naming the canary passed the kind's rules")
	for _, key := range m.names {
		m.retry(key, func(obj store.Object[*Job]) error {
			_, err := m.c.Delete(m.t.Context(), key, obj.Revision)
			return err
		})
	}
	m.wait("every job gone", func() bool {
		objs, _, err := m.c.List(t.Context(), KeyPrefix)
		return err == nil && len(objs) == 0
	})
	m.checkOutside()
}

func startHostileModel(t *testing.T, seed uint64) *hostileModel {
	t.Setenv(testMainEnv, "1") // the shims the daemon starts run main
	root := t.TempDir()
	m := &hostileModel{t: t, rng: rand.New(rand.NewPCG(seed, 37)), root: root, dir: filepath.Join(root, "daemon"),
		outside: filepath.Join(root, "outside"), taskLog: filepath.Join(root, "tasks", "tasks.log"),
		token: "hostile-model-token", backoff: 200 * time.Millisecond,
		forged: map[string]Status{}, forgedAt: map[string]int64{}}
	for _, d := range []string{m.dir, m.outside, filepath.Dir(m.taskLog)} {
		require.NoError(t, os.MkdirAll(d, 0o700))
	}
	require.NoError(t, os.WriteFile(filepath.Join(m.outside, "victim.result"), []byte(`{"exitCode":0}`), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(m.outside, "victim.claim"), []byte("1\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(m.outside, "precious"), []byte("keep me"), 0o600))
	m.before = snapshot(t, m.outside)
	m.canary, m.ticks = canaryProcess(t)
	exe, err := os.Executable()
	require.NoError(t, err)
	m.exe = exe
	m.startDaemon()
	return m
}

// startDaemon runs a daemon in this process until the test ends.
func (m *hostileModel) startDaemon() {
	t := m.t
	ctx, cancel := context.WithCancel(context.Background())
	logs := &syncbuf.Buffer{}
	done := make(chan error, 1)
	go func() {
		done <- RunDaemon(ctx, DaemonConfig{Dir: m.dir, Addr: "127.0.0.1:0", Token: m.token, Workers: 4, Grace: time.Second,
			BackoffBase: 20 * time.Millisecond, BackoffMax: m.backoff, Executable: m.exe, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	}()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
		if t.Failed() {
			lines := strings.Split(logs.String(), "\n")
			t.Logf("daemon logs (tail):\n%s", strings.Join(lines[max(0, len(lines)-60):], "\n"))
		}
	})
	m.wait("the daemon serving", func() bool {
		b, err1 := os.ReadFile(filepath.Join(m.dir, HTTPFile))
		u, err2 := os.ReadFile(filepath.Join(m.dir, URLFile))
		if err1 != nil || err2 != nil {
			return false
		}
		m.base = strings.TrimSpace(string(b))
		c, err := httpstore.New[*Job](strings.TrimSpace(string(u)), httpstore.WithToken(m.token))
		require.NoError(t, err)
		m.c = c
		return procs.Probe(t.Context(), m.base+procs.ReadyPath) == http.StatusOK
	})
	t.Cleanup(func() { _ = m.c.Close() })
}

// pick returns one of vs at random.
func pick[T any](rng *rand.Rand, vs ...T) T { return vs[rng.IntN(len(vs))] }

// randomSpec is a spec with random and hostile values in every field.
// The commands it runs are harmless: the test's task, or no program.
func (m *hostileModel) randomSpec(i int) Spec {
	task := fmt.Sprintf("j%d", i)
	s := Spec{Command: m.exe, Args: []string{taskArg, m.taskLog, task, "ok"}}
	if m.rng.IntN(3) == 0 {
		s.Args = []string{taskArg, m.taskLog, task, "fail", "3"}
	}
	switch m.rng.IntN(6) {
	case 0:
		s.Command = pick(m.rng, "", "a\x00b", "/nonexistent/program", "../../outside/precious")
	case 1:
		s.Args = append(s.Args, pick(m.rng, hostileStrings...), pick(m.rng, "x\x00y", "ok"))
	}
	s.Retries = pick(m.rng, 0, 1, 2, -1, maxRetries+1, math.MaxInt)
	s.Timeout = pick(m.rng, Duration(0), Duration(time.Hour), Duration(-time.Second), Duration(math.MaxInt64))
	return s
}

// randomStatus is a status with random and hostile values in every field,
// for obj.
func (m *hostileModel) randomStatus(obj store.Object[*Job]) Status {
	gen := obj.Value.Generation
	other := m.names[m.rng.IntN(len(m.names))]
	st := Status{
		Phase:         pick(m.rng, "", Starting, Running, Backoff, Succeeded, Failed, Phase("Bogus\x1b[31m")),
		Attempts:      pick(m.rng, math.MinInt, -1, 0, 1, 3, math.MaxInt),
		RunGeneration: pick(m.rng, 0, 1, gen, -7, math.MaxInt64),
		PID:           pick(m.rng, 0, -1, m.canary, 1<<22),
		StartTicks:    pick(m.rng, m.ticks, 0, math.MaxUint64),
		Message:       pick(m.rng, hostileStrings...),
		NextAttemptAt: pick(m.rng, time.Time{}, time.Now().Add(100*365*24*time.Hour), time.Now().Add(-time.Hour)),
	}
	st.RunID = pick(m.rng, append(hostileStrings, filepath.Join(m.outside, "victim"),
		runID(obj.Key, obj.CreateRevision, st.RunGeneration, st.Attempts), runID(other, 1, 1, 1))...)
	if m.rng.IntN(2) == 0 {
		code := pick(m.rng, -1, 0, 255, math.MaxInt)
		st.ExitCode = &code
	}
	return st
}

// addJob adds job i under a random, often hostile, name.
func (m *hostileModel) addJob(i int) {
	name := fmt.Sprintf("%s%d", pick(m.rng, append(hostileStrings, "plain-")...), i)
	obj, err := m.c.Create(m.t.Context(), KeyPrefix+name, &Job{Spec: m.randomSpec(i)})
	if errors.Is(err, store.ErrInvalid) {
		return // the store refuses the key: nothing to run
	}
	require.NoError(m.t, err, "%q", name)
	m.names = append(m.names, obj.Key)
}

// respec writes a new random spec for key (a new generation).
func (m *hostileModel) respec(key string, i int) {
	spec := m.randomSpec(i)
	m.retry(key, func(obj store.Object[*Job]) error {
		v := *obj.Value
		v.Spec = spec
		_, err := m.c.Update(m.t.Context(), key, &v, obj.Revision)
		return err
	})
}

// forgeAll writes the status gen makes over every job's, as a token
// holder can with "convergectl status".
func (m *hostileModel) forgeAll(gen func(store.Object[*Job]) Status) {
	for _, key := range m.names {
		m.retry(key, func(obj store.Object[*Job]) error {
			v := *obj.Value
			v.Status = gen(obj)
			written, err := m.c.UpdateStatus(m.t.Context(), key, &v, obj.Revision)
			if err == nil {
				m.forged[key], m.forgedAt[key] = v.Status, written.Revision
			}
			return err
		})
	}
}

// retry runs write on the current object at key until it does not
// conflict with the daemon's own writes.
func (m *hostileModel) retry(key string, write func(store.Object[*Job]) error) {
	m.t.Helper()
	for range 50 {
		obj, err := m.c.Get(m.t.Context(), key)
		require.NoError(m.t, err)
		err = write(obj)
		if errors.Is(err, apistore.ErrRejected) {
			// The kind's rules refuse it at the door, naming the field:
			// nothing is stored, and the daemon never sees it.
			require.ErrorContains(m.t, err, fmt.Sprintf("%q", key))
			m.rejected++
			return
		}
		if !errors.Is(err, store.ErrConflict) {
			require.NoError(m.t, err)
			return
		}
	}
	m.t.Fatalf("%s: conflicts without end", key)
}

// settled reports whether the daemon has nothing left to do for obj now:
// final for its generation, or waiting for a backoff that ends in years.
func settled(obj store.Object[*Job]) bool {
	st := obj.Value.Status
	return st.Phase.Final() && st.RunGeneration == obj.Value.Generation ||
		st.Phase == Backoff && time.Until(st.NextAttemptAt) > time.Hour
}

// waitIdle waits until every job is settled and the daemon reconciles
// nothing over a few of its longest backoffs.
func (m *hostileModel) waitIdle() {
	var unsettled []string
	m.wait("every job settled", func() bool {
		objs, _, err := m.c.List(m.t.Context(), KeyPrefix)
		if err != nil {
			return false
		}
		unsettled = unsettled[:0]
		for _, o := range objs {
			if !settled(o) {
				unsettled = append(unsettled, fmt.Sprintf("%q gen %d spec %+v status %+v", o.Key, o.Value.Generation, o.Value.Spec, o.Value.Status))
			}
		}
		return len(unsettled) == 0
	}, &unsettled)
	last := m.reconciles()
	m.wait("no reconcile over 5 backoffs", func() bool {
		select {
		case <-time.After(5 * m.backoff):
		case <-m.t.Context().Done():
		}
		n := m.reconciles()
		if n == last {
			return true
		}
		last = n
		return false
	})
}

// reconciles returns the reconciles the daemon made, from its metrics.
func (m *hostileModel) reconciles() float64 {
	req, err := http.NewRequestWithContext(m.t.Context(), http.MethodGet, m.base+MetricsPath, nil)
	require.NoError(m.t, err)
	req.Header.Set("Authorization", "Bearer "+m.token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(m.t, err)
	defer resp.Body.Close()
	var total float64
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, "controller_runtime_reconcile_total{") {
			f := strings.Fields(line)
			n, err := strconv.ParseFloat(f[len(f)-1], 64)
			require.NoError(m.t, err)
			total += n
		}
	}
	return total
}

// wait polls cond until it holds, failing the test after a minute.
func (m *hostileModel) wait(what string, cond func() bool, why ...*[]string) {
	m.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			for _, w := range why {
				m.t.Logf("%s", strings.Join(*w, "\n"))
			}
			m.t.Fatalf("waiting for %s: gave up", what)
		}
		select {
		case <-time.After(20 * time.Millisecond):
		case <-m.t.Context().Done():
			m.t.Fatalf("waiting for %s: %v", what, m.t.Context().Err())
		}
	}
}

// runFile is the name of a file the daemon makes in its runs directory:
// a run ID as runID spells it, with its suffix, or a temporary file of one.
var runFile = regexp.MustCompile(`^\.?[A-Za-z0-9._-]{0,64}-c[0-9]+-g-?[0-9]+-a-?[0-9]+\.(claim|result|log)(\.[0-9]+\.tmp)?$`)

// check checks what the model guarantees once the daemon is idle.
func (m *hostileModel) check() {
	t := m.t
	m.checkOutside()
	runs, err := os.ReadDir(filepath.Join(m.dir, "runs"))
	require.NoError(t, err)
	for _, e := range runs {
		require.Regexp(t, runFile, e.Name(), "a file in the runs directory not named by a run ID the daemon makes")
	}
	for _, key := range m.names {
		obj, err := m.c.Get(t.Context(), key)
		require.NoError(t, err)
		if checkSpec(obj.Value.Spec) == nil {
			continue
		}
		st := obj.Value.Status
		// A final status forged for the job's generation is the daemon's to
		// trust: it runs nothing more and leaves that status as it is
		// (other writes, of metadata, may come after it).
		untouched := sameStatus(t, st, m.forged[key]) && st.Phase.Final() && st.RunGeneration == obj.Value.Generation
		refused := st.Phase == Failed && st.RunGeneration == obj.Value.Generation && strings.HasPrefix(st.Message, "invalid spec: ")
		require.True(t, untouched || refused, "%q: a spec no attempt can run, not refused: %+v (revision %d, status forged at %d, generation %d)", key, st, obj.Revision, m.forgedAt[key], obj.Value.Generation)
	}
}

// sameStatus reports whether a and b say the same once stored (as JSON,
// so that times compare without their monotonic readings).
func sameStatus(t *testing.T, a, b Status) bool {
	ja, err := json.Marshal(a)
	require.NoError(t, err)
	jb, err := json.Marshal(b)
	require.NoError(t, err)
	return string(ja) == string(jb)
}

// checkOutside checks the canaries: the process lives, the directory
// beside the daemon's is as it was, and the root holds nothing new.
func (m *hostileModel) checkOutside() {
	t := m.t
	require.True(t, procstat.Alive(m.canary, m.ticks), "the canary process was signalled")
	require.Equal(t, m.before, snapshot(t, m.outside), "the directory beside the daemon's changed")
	entries, err := os.ReadDir(m.root)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	require.ElementsMatch(t, []string{"daemon", "outside", "tasks"}, names, "a file was made beside the daemon's directory")
}

// checkList checks that "jobs list" prints no control character from
// the store.
func (m *hostileModel) checkList() {
	var out bytes.Buffer
	require.NoError(m.t, cmdList(m.t.Context(), []string{"-dir", m.dir, "-token", m.token}, &out))
	for _, b := range out.Bytes() {
		require.False(m.t, b < 0x20 && b != '\n' || b == 0x7f, "jobs list printed control byte %#x:\n%s", b, out.String())
	}
	require.NotContains(m.t, out.String(), "\u202e")
	// The debug page shows the keys and errors as text, never as markup.
	req, err := http.NewRequestWithContext(m.t.Context(), http.MethodGet, m.base+DebugPath, nil)
	require.NoError(m.t, err)
	req.Header.Set("Authorization", "Bearer "+m.token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(m.t, err)
	defer resp.Body.Close()
	page, err := io.ReadAll(resp.Body)
	require.NoError(m.t, err)
	require.Equal(m.t, http.StatusOK, resp.StatusCode)
	require.NotContains(m.t, string(page), "<script>alert(1)", "a key written as markup reached the debug page")
}

// snapshot returns the files of dir with their contents.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		files[p] = string(b)
		return err
	}))
	return files
}

// canaryForged returns the keys whose last forged status names the
// canary process.
func (m *hostileModel) canaryForged() []string {
	var keys []string
	for key, st := range m.forged {
		if st.PID == m.canary {
			keys = append(keys, key)
		}
	}
	return keys
}
