package manager

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/converge-go/converge/internal/invalid"
	"github.com/converge-go/converge/internal/nilness"
	"github.com/converge-go/converge/internal/panicerr"
	"github.com/converge-go/converge/internal/running"
	"github.com/converge-go/converge/lock"
	"github.com/converge-go/converge/reconcile/dependency"
)

// DefaultShutdownTimeout is how long Manager.Run waits, once its context has
// ended, for its runnables to return, unless Options says otherwise.
const DefaultShutdownTimeout = 30 * time.Second

// Errors of the Manager. Test for them with errors.Is. A runnable that
// panics makes Run return a *reconcile.PanicError (errors.As), the same
// representation a reconcile's panic has.
var (
	// ErrAlreadyRunning: Add, Handle or Run was called after Run had
	// started: a Manager runs once. errors.Is matches it with the
	// ErrAlreadyRunning of every converge package
	// (reconcile.ErrAlreadyRunning included).
	ErrAlreadyRunning error = running.New("manager")
	// ErrStarted is the former name of ErrAlreadyRunning.
	//
	// Deprecated: use ErrAlreadyRunning.
	ErrStarted = ErrAlreadyRunning
	// ErrInvalid: bad input (a nil runnable, a negative timeout, a
	// runnable whose name is taken). errors.Is matches it with the
	// ErrInvalid of every converge package.
	ErrInvalid error = invalid.New("manager")
	// ErrShutdownTimeout: runnables were still running when the shutdown
	// timeout expired; the error names them.
	ErrShutdownTimeout = errors.New("manager: shutdown timed out")
)

// Runnable is a long-running part of a program run by a Manager: a
// controller, a server, a periodic job. Run blocks until ctx ends, then
// returns nil or ctx's error (a clean stop), or returns earlier with a fatal
// error that stops the whole manager. Returning nil before ctx ends means the
// runnable is finished; the others keep running.
//
// A runnable may also implement Name() string, which names it in logs,
// errors and health output (otherwise it is called "runnable-N", N its
// position in Add order), ReadyChecker, HealthChecker and LeaderOnly.
type Runnable interface {
	Run(ctx context.Context) error
}

// RunnableFunc adapts a function to Runnable.
type RunnableFunc func(ctx context.Context) error

// Run calls f(ctx).
func (f RunnableFunc) Run(ctx context.Context) error { return f(ctx) }

// LeaderOnly is implemented by runnables that may act only while their
// process holds leadership (for example controllers that write to the world).
// The manager records the answer when the runnable is added. With
// Options.Elector, leader-only runnables start when leadership is won
// and are stopped the moment it is in doubt, then started again (Run called
// again) at the next term, so they must be restartable; Controller is.
// Without an elector they run like the others.
type LeaderOnly interface {
	NeedsLeaderElection() bool
}

// Options configure a Manager. The zero value is valid.
type Options struct {
	// Logger receives the manager's logs (nil: discard).
	Logger *slog.Logger
	// ShutdownTimeout is how long Run waits, after its context ends or a
	// runnable fails, for the runnables to return (0: DefaultShutdownTimeout).
	// Negative values are refused.
	ShutdownTimeout time.Duration
	// Elector, if set, gates leader-only runnables: they run only while it
	// leads, with a context cancelled the moment leadership is in doubt and
	// carrying the term's lock (lock.FromContext; a controller passes it on
	// to every reconcile). Writes made on behalf of the leadership should
	// carry its Guard so that a deposed leader's late writes are rejected.
	Elector *lock.Elector
	// Dependencies are external systems the whole process needs (a
	// database every controller uses), checked on every replica while Run
	// runs (see reconcile/dependency for intervals, thresholds and
	// bounds). While one is down the manager is unready (Ready, /readyz:
	// "dependencies: " and the dependency's name, since when and latest
	// error), never unhealthy. A controller's own dependencies
	// (reconcile.Options.Dependencies) make it unready already, and so the
	// manager. Give the controllers the same *dependency.Dependency: one
	// check then serves the manager and them all, and they see it down at
	// the same instant (Add refuses another of the same name).
	Dependencies []*dependency.Dependency
	// Server, if set, makes Run serve HTTP on one address for the whole
	// process: /healthz and /readyz, and whatever is mounted with Handle
	// (a store API, a debug page, metrics). It starts before the other
	// runnables, runs on every replica (not only the leader) and shuts down
	// gracefully with the rest, within ShutdownTimeout.
	Server *ServerOptions
}

// Manager runs several runnables (controllers and the like) under one
// context, stops them all when the context ends or one of them fails, and
// reports their readiness and health (see Ready, Healthy, Readyz, Healthz).
//
// A Manager runs once: add every runnable, then call Run.
type Manager struct {
	log             *slog.Logger
	shutdownTimeout time.Duration
	elector         *lock.Elector
	deps            *dependency.Set // nil without Options.Dependencies
	// shared holds each dependency of the manager and of its runnables by
	// name, with who gave it first (see Add); guarded by mu.
	shared map[string]sharedDependency

	mu        sync.Mutex
	runnables []*managed
	phase     managerPhase
	mux       *http.ServeMux // nil without Options.Server
	listener  net.Listener   // the server's, once it listens
}

// managed is a runnable with what the manager knows about it.
type managed struct {
	runnable   Runnable
	name       string
	leaderOnly bool

	mu      sync.Mutex
	running bool
}

type managerPhase uint8

const (
	phaseIdle managerPhase = iota
	phaseRunning
	phaseStopping
	phaseStopped
)

func (p managerPhase) String() string {
	switch p {
	case phaseIdle:
		return "not started"
	case phaseRunning:
		return "running"
	case phaseStopping:
		return "stopping"
	default:
		return "stopped"
	}
}

// New returns a Manager with no runnables of the caller's yet (with
// Options.Server, its HTTP server is the first runnable, named "http";
// with Options.Dependencies, their checks are the next, named
// "dependencies"). A negative ShutdownTimeout, a bad dependency (see
// dependency.NewSet), or a Server without an address, with a negative
// limit, an unusable token or a malformed host or origin, returns an error
// matching ErrInvalid.
func New(opts Options) (*Manager, error) {
	if opts.ShutdownTimeout < 0 {
		return nil, fmt.Errorf("%w: negative manager shutdown timeout %v", ErrInvalid, opts.ShutdownTimeout)
	}
	m := &Manager{log: opts.Logger, shutdownTimeout: opts.ShutdownTimeout, elector: opts.Elector}
	if m.log == nil {
		m.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if m.shutdownTimeout == 0 {
		m.shutdownTimeout = DefaultShutdownTimeout
	}
	if opts.Server != nil {
		srv, err := newHTTPServer(m, *opts.Server)
		if err != nil {
			return nil, err
		}
		m.runnables = append(m.runnables, &managed{runnable: srv, name: "http"})
	}
	if len(opts.Dependencies) > 0 {
		deps, err := dependency.NewSet(opts.Dependencies...)
		if err != nil {
			return nil, fmt.Errorf("manager: Dependencies: %w", err)
		}
		m.deps = deps
		m.shareDependencies("the manager", opts.Dependencies)
		m.runnables = append(m.runnables, &managed{runnable: dependencies{deps}, name: "dependencies"})
	}
	return m, nil
}

// Add registers r to be run by Run. It fails with ErrInvalid for a nil
// runnable (a nil interface, function or pointer), one whose name another
// runnable has, or one that depends (DependsOn, as a reconcile.Controller
// does) on a *dependency.Dependency other than the one of the same name
// the manager or another runnable has; and with ErrAlreadyRunning once Run has
// started.
func (m *Manager) Add(r Runnable) error {
	if nilness.Is(r) {
		return fmt.Errorf("%w: nil runnable", ErrInvalid)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.phase != phaseIdle {
		return fmt.Errorf("%w: cannot add a runnable", ErrAlreadyRunning)
	}
	name := fmt.Sprintf("runnable-%d", len(m.runnables)+1)
	if n, ok := r.(interface{ Name() string }); ok && n.Name() != "" {
		name = n.Name()
	}
	for _, other := range m.runnables {
		if other.name == name {
			return fmt.Errorf("%w: duplicate runnable name %q", ErrInvalid, name)
		}
	}
	if err := m.dependsOn(name, r); err != nil {
		return err
	}
	lo, ok := r.(LeaderOnly)
	m.runnables = append(m.runnables, &managed{runnable: r, name: name, leaderOnly: ok && lo.NeedsLeaderElection()})
	return nil
}

// Run runs every runnable in its own goroutine under a context derived from
// ctx, and returns:
//
//   - nil when ctx ends and every runnable has returned nil or a context
//     error within the shutdown timeout;
//   - the first fatal error, wrapped with the runnable's name: a runnable
//     returned a non-nil error (other than a context error once the run's
//     context has ended) or panicked (a *reconcile.PanicError). The error cancels
//     the others' context, and Run returns once they have returned;
//   - an error matching ErrShutdownTimeout, naming the runnables still
//     running, when they have not all returned within the shutdown timeout
//     after ctx ended or a runnable failed (joined with the fatal error, if
//     any). Those runnables are left running: Run cannot stop a goroutine that
//     ignores its context.
//
// Run blocks until ctx ends even if every runnable returns nil earlier, so
// that health endpoints keep reporting. It may be called once; a second call
// returns ErrAlreadyRunning.
func (m *Manager) Run(ctx context.Context) error {
	runnables, err := m.begin()
	if err != nil {
		return err
	}
	defer m.setPhase(phaseStopped)

	g, gctx := errgroup.WithContext(ctx)
	fatal := firstError{set: make(chan struct{})}
	m.start(gctx, g, runnables, &fatal)
	done := make(chan error, 1)
	go func() { done <- g.Wait() }()

	select {
	case err := <-done:
		if err != nil {
			return err
		}
		<-ctx.Done()
		m.log.Info("manager stopped")
		return nil
	case <-ctx.Done():
	case <-fatal.set:
	}

	m.setPhase(phaseStopping)
	m.log.Info("manager stopping", "timeout", m.shutdownTimeout)
	timer := time.NewTimer(m.shutdownTimeout)
	defer timer.Stop()
	select {
	case err := <-done:
		if err == nil {
			m.log.Info("manager stopped")
		}
		return err
	case <-timer.C:
		var stuck []string
		for _, r := range runnables {
			if r.isRunning() {
				stuck = append(stuck, r.name)
			}
		}
		err := fmt.Errorf("%w after %v: still running: %s", ErrShutdownTimeout, m.shutdownTimeout, strings.Join(stuck, ", "))
		m.log.Error("manager shutdown timed out", "timeout", m.shutdownTimeout, "running", stuck)
		return errors.Join(fatal.get(), err)
	}
}

// begin moves the manager from idle to running and returns its runnables.
func (m *Manager) begin() ([]*managed, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.phase != phaseIdle {
		return nil, fmt.Errorf("%w: Run may be called once", ErrAlreadyRunning)
	}
	m.phase = phaseRunning
	return m.runnables, nil
}

// start launches the runnables. It is the one place where runnables are
// started: with an elector, leader-only runnables are held back until
// leadership is won; without one they start at once like the others.
func (m *Manager) start(ctx context.Context, g *errgroup.Group, runnables []*managed, fatal *firstError) {
	var leaderOnly []*managed
	for _, r := range runnables {
		if r.leaderOnly && m.elector != nil {
			leaderOnly = append(leaderOnly, r)
			continue
		}
		m.launch(ctx, g, r, fatal)
	}
	if len(leaderOnly) == 0 {
		return
	}
	for _, r := range leaderOnly {
		r.setRunning(true) // counted as running until the elector stops
	}
	g.Go(func() error {
		defer func() {
			for _, r := range leaderOnly {
				r.setRunning(false)
			}
		}()
		err := m.elector.Run(ctx, func(lead context.Context) error {
			m.log.Info("leading: starting leader-only runnables", "count", len(leaderOnly))
			// A failing leader-only runnable cancels the others of its
			// term, so that the error reaches the manager.
			term, termCtx := errgroup.WithContext(lead)
			for _, r := range leaderOnly {
				m.launch(termCtx, term, r, fatal)
			}
			err := term.Wait()
			m.log.Info("leader-only runnables stopped", "leading", m.elector.IsLeader())
			return err
		})
		if err != nil && !isContextError(err) {
			fatal.record(fmt.Errorf("manager: leader election: %w", err))
		}
		return err
	})
}

// launch runs r in g under ctx; its error, if fatal, is recorded.
func (m *Manager) launch(ctx context.Context, g *errgroup.Group, r *managed, fatal *firstError) {
	r.setRunning(true)
	g.Go(func() error {
		defer r.setRunning(false)
		m.log.Info("runnable starting", "runnable", r.name, "leaderOnly", r.leaderOnly)
		err := m.runGuarded(ctx, r)
		if err == nil || (ctx.Err() != nil && isContextError(err)) {
			m.log.Info("runnable stopped", "runnable", r.name)
			return nil
		}
		err = fmt.Errorf("manager: runnable %q: %w", r.name, err)
		m.log.Error("runnable failed", "runnable", r.name, "err", err)
		fatal.record(err)
		return err
	})
}

// IsLeader reports whether leader-only runnables may run: true while the
// elector leads, and always true without an elector.
func (m *Manager) IsLeader() bool { return m.elector == nil || m.elector.IsLeader() }

// runGuarded runs r, turning a panic into an error.
func (m *Manager) runGuarded(ctx context.Context, r *managed) (err error) {
	defer func() {
		if p := recover(); p != nil {
			stack := debug.Stack()
			m.log.Error("runnable panicked", "runnable", r.name, "panic", p, "stack", string(stack))
			err = &panicerr.Error{Value: p, Stack: stack}
		}
	}()
	return r.runnable.Run(ctx)
}

func (m *Manager) setPhase(p managerPhase) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.phase = p
}

func (m *Manager) snapshot() (managerPhase, []*managed) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.phase, m.runnables
}

func (r *managed) setRunning(v bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.running = v
}

func (r *managed) isRunning() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.running
}

// firstError keeps the first error recorded and closes set when it is.
type firstError struct {
	set chan struct{}

	mu  sync.Mutex
	err error
}

func (f *firstError) record(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err == nil {
		f.err = err
		close(f.set)
	}
}

func (f *firstError) get() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

func isContextError(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
