package checkpoint

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/converge-go/converge/internal/invalid"
	"github.com/converge-go/converge/store"
)

// Defaults of the zero fields of Options (StartAfter's is the
// controller's: three of its Options.HeartbeatInterval).
const (
	DefaultInterval = 5 * time.Second
	DefaultMaxAge   = 24 * time.Hour
)

// MaxSkew is how far in the future a checkpoint's Seen may lie and still
// be used (State.CheckAge): a wall clock stepped back a little after the
// checkpoint was written. Beyond it, the clock that wrote it or the one
// that reads it is wrong, the checkpoint's age is unknown, and it is
// refused.
const MaxSkew = time.Second

// Errors of the package. Test for them with errors.Is.
var (
	// ErrNone: the Store holds no checkpoint (none has been written).
	ErrNone = errors.New("checkpoint: none written")
	// ErrDamaged: what the Store holds is damaged (a checksum or a count
	// that does not match, a record that does not decode); nothing of it
	// counts. The next Write with Replace set starts it afresh.
	ErrDamaged = errors.New("checkpoint: damaged")
	// ErrInvalid matches the errors for bad options and bad batches, and
	// the ErrInvalid of every converge package.
	ErrInvalid error = invalid.New("checkpoint")
	// ErrTooOld: the checkpoint's Seen is older than the maximum age
	// (Options.MaxAge); it is not used.
	ErrTooOld = errors.New("checkpoint: past its maximum age")
	// ErrFuture: the checkpoint's Seen lies more than MaxSkew after now;
	// its age is unknown and it is not used.
	ErrFuture = errors.New("checkpoint: seen in the future")
)

// State is a checkpoint: a controller's desired state at one revision of
// its store.
type State[T any] struct {
	// Identity is the identity of the store the state was read from
	// (store.Identifier), "" for a store without one.
	Identity string
	// Prefix is the controller's view (its Options.Prefix): a checkpoint of
	// another prefix is not used.
	Prefix string
	// Revision is the store revision the objects reflect: every change up
	// to it, none after it.
	Revision int64
	// Seen is when the controller last heard from its store while its cache
	// held this state (or an older one), by the clock of the process that
	// wrote it: the checkpoint's age is the time since.
	Seen time.Time
	// Objects are the objects of the view at Revision, in key order.
	Objects []store.Object[T]
}

// CheckAge returns the state's age at now (now minus Seen), with an error
// if it is not to be used: ErrFuture if Seen lies more than MaxSkew after
// now, ErrTooOld if the age exceeds maxAge. A state exactly maxAge old is
// used; a zero Seen is too old.
func (st *State[T]) CheckAge(now time.Time, maxAge time.Duration) (time.Duration, error) {
	age := now.Sub(st.Seen)
	switch {
	case st.Seen.IsZero():
		return age, fmt.Errorf("%w: never seen", ErrTooOld)
	case age < -MaxSkew:
		return age, fmt.Errorf("%w: seen at %v, %v after now (clock skew allowed: %v)",
			ErrFuture, st.Seen.Round(0), (-age).Round(time.Millisecond), MaxSkew)
	case age > maxAge:
		return age, fmt.Errorf("%w: %v old, past MaxAge %v", ErrTooOld, age.Round(time.Second), maxAge)
	}
	return age, nil
}

// Batch is one write of a checkpoint: what changed since the previous
// one, or the whole state.
type Batch[T any] struct {
	// Identity, Prefix, Revision and Seen are the State's after the write.
	Identity string
	Prefix   string
	Revision int64
	Seen     time.Time
	// Replace makes Put the whole state: every object not in it goes.
	Replace bool
	// Put holds the objects new or changed, Delete the keys gone; no key
	// is in both, or twice.
	Put    []store.Object[T]
	Delete []string
}

// Check returns an error matching ErrInvalid if b is not a batch a Store
// can apply: a negative revision, an object newer than the revision or
// with a create revision after its revision, a nil value, an invalid key or
// one outside Prefix, or a key twice. It costs one map of the batch's keys.
func (b *Batch[T]) Check() error {
	if b.Revision < 0 {
		return fmt.Errorf("%w: revision %d", ErrInvalid, b.Revision)
	}
	keys := make(map[string]struct{}, len(b.Put)+len(b.Delete))
	add := func(key string) error {
		if err := store.ValidateKey(key); err != nil {
			return fmt.Errorf("%w: %w", ErrInvalid, err)
		}
		if !strings.HasPrefix(key, b.Prefix) {
			return fmt.Errorf("%w: key %q outside prefix %q", ErrInvalid, key, b.Prefix)
		}
		if _, dup := keys[key]; dup {
			return fmt.Errorf("%w: key %q twice in one batch", ErrInvalid, key)
		}
		keys[key] = struct{}{}
		return nil
	}
	for _, obj := range b.Put {
		if obj.Revision > b.Revision || obj.CreateRevision < 1 || obj.CreateRevision > obj.Revision {
			return fmt.Errorf("%w: object %q at revision %d (created %d) in a batch of revision %d", ErrInvalid, obj.Key, obj.Revision, obj.CreateRevision, b.Revision)
		}
		if err := add(obj.Key); err != nil {
			return err
		}
		if err := store.ValidateValue(obj.Value); err != nil {
			return fmt.Errorf("%w: object %q: %w", ErrInvalid, obj.Key, err)
		}
	}
	for _, key := range b.Delete {
		if err := add(key); err != nil {
			return err
		}
	}
	return nil
}

// Store keeps one controller's checkpoint. Its methods may be called from
// several goroutines, though a controller calls Write from one. The
// controller never closes it: whoever opened it closes it, after Run has
// returned.
type Store[T any] interface {
	// Load returns the checkpoint held, ErrNone if none is, or ErrDamaged
	// if it is damaged (never part of a damaged checkpoint).
	Load() (State[T], error)
	// Write applies b whole or not at all, durably once it returns nil: a
	// Load after a crash at any moment returns the state before b or the
	// state after it. A batch without Replace applied to a damaged
	// checkpoint fails with ErrDamaged; a bad batch with ErrInvalid.
	Write(b Batch[T]) error
}

// Options configure a controller's checkpoint (reconcile.Options.Checkpoint).
// Without a Store there is none; the other fields have working zero values.
type Options[T any] struct {
	// Store keeps the checkpoint (store/boltstore's OpenCheckpoint, a
	// file). One controller writes one Store.
	Store Store[T]
	// StartAfter is how long Run tries to list the store before it starts
	// from the checkpoint (default three of the controller's
	// HeartbeatInterval: 6 seconds by default).
	StartAfter time.Duration
	// MaxAge refuses a checkpoint whose Seen is older than this, or lies
	// more than MaxSkew in the future (State.CheckAge): the controller
	// then waits for its store (default DefaultMaxAge).
	MaxAge time.Duration
	// Interval is how often the changes of the cache are written (default
	// DefaultInterval). A list that changed nothing in the cache is
	// written at once; one that changed keys at the next Interval, so that
	// its write (whole, for the first) yields to the reconciles it woke.
	Interval time.Duration
}

// Check returns an error matching ErrInvalid for a negative duration.
func (o *Options[T]) Check() error {
	if o.StartAfter < 0 || o.MaxAge < 0 || o.Interval < 0 {
		return fmt.Errorf("%w: durations must not be negative", ErrInvalid)
	}
	return nil
}

// Status is what a controller reports of its checkpoint
// (reconcile.Health.Checkpoint).
type Status struct {
	// Enabled: the controller has a checkpoint (Options.Store).
	Enabled bool
	// Active: the controller runs from the checkpoint: it could not list
	// its store within StartAfter of its start and has not caught up with
	// it since. Keys the checkpoint lacks wait meanwhile
	// (reconcile.AwaitingStore).
	Active bool
	// Revision and Seen are the checkpoint's in use while Active, else the
	// latest written (zero before the first); Age is the time from Seen to
	// the report.
	Revision int64
	Seen     time.Time
	Age      time.Duration
	// Refused says why the checkpoint was not used when the store could
	// not be listed in time ("" if it was, or if it was not needed): none
	// written, damaged, older than MaxAge or seen in the future, of
	// another prefix or store.
	Refused string
	// Writes counts the checkpoints written, Failures the writes that
	// failed (the next write is then a whole one), LastError the latest
	// failure's error.
	Writes, Failures int64
	LastError        string
	// Damaged counts the damaged checkpoints found (and ignored).
	Damaged int64
}
