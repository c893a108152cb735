package prune

import (
	"errors"
	"fmt"
	"strings"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/store"
)

// WorldObject is an object of the world as Options.World lists it.
type WorldObject struct {
	// Key is the store key of the desired object it stands for (a
	// database "app" for the key "databases/app").
	Key string
	// Name is what the world calls it, for Options.Delete and the logs.
	Name string
	// Mark is the mark read beside it; the zero Mark for none (an object
	// someone else made, or whose mark cannot be read: see ParseMark).
	Mark Mark
}

// Selection is what Select made of the world: the objects to prune, and
// how many of the others were kept, and why. Each object of the world is
// counted once, under the first of these that applies.
type Selection struct {
	// Unmarked: no mark. OtherOwner: marked by another owner. OtherStore:
	// marked by this owner from another store (the store was replaced, or
	// the operator runs against another one). OutOfView: marked as its own
	// but for a key that is not a valid store key under Options.Prefix.
	// Kept: its own, and desired.
	Unmarked, OtherOwner, OtherStore, OutOfView, Kept int
	// Prune lists its own objects that are not desired, in world order.
	Prune []WorldObject
}

// Select is the selection of a prune, a pure function: of world, it picks
// the objects marked exactly mine (the same Owner and the same Store) for
// a valid store key under prefix that desired reports not desired. It
// never picks an unmarked object nor one marked by another owner or from
// another store, whatever desired says. mine must have a non-empty Owner
// and Store, or nothing is picked.
func Select(world []WorldObject, mine Mark, prefix string, desired func(key string) bool) Selection {
	var sel Selection
	for _, obj := range world {
		switch {
		case obj.Mark.IsZero():
			sel.Unmarked++
		case obj.Mark.Owner != mine.Owner || mine.Owner == "":
			sel.OtherOwner++
		case obj.Mark.Store != mine.Store || mine.Store == "":
			sel.OtherStore++
		case !strings.HasPrefix(obj.Key, prefix) || store.ValidateKey(obj.Key) != nil:
			sel.OutOfView++
		case desired(obj.Key):
			sel.Kept++
		default:
			sel.Prune = append(sel.Prune, obj)
		}
	}
	return sel
}

// Facts are what a pass has read before it may delete anything.
type Facts struct {
	// Ready is the controller's Ready error (the first error of its reads
	// at the start and at the end of the pass): nil, or one matching
	// reconcile.ErrNotSynced or reconcile.ErrDegraded.
	Ready error
	// Before is the store's identity read before the world was listed,
	// After the one read after the desired set was listed.
	Before, After string
	// Desired counts the objects of the desired set.
	Desired int
	// AllowEmpty is Options.AllowEmpty.
	AllowEmpty bool
}

// Check is the gate of a prune, a pure function: nil only when the
// controller is synced and its store not degraded (Ready is nil), the
// store's identity was read and did not change during the pass, and the
// desired set is not empty or AllowEmpty says an empty one is meant.
// Otherwise it returns an error matching ErrRefused and the cause: the
// Ready error as it is (reconcile.ErrNotSynced, reconcile.ErrDegraded),
// ErrInvalid for an empty identity, ErrIdentityChanged, ErrEmpty; the
// first that applies, in that order.
func Check(f Facts) error {
	switch {
	case f.Ready != nil:
		return refusal(f.Ready)
	case f.Before == "" || f.After == "":
		return refusal(fmt.Errorf("%w: the store reported an empty identity", ErrInvalid))
	case f.Before != f.After:
		return refusal(fmt.Errorf("%w: from %q to %q", ErrIdentityChanged, f.Before, f.After))
	case f.Desired == 0 && !f.AllowEmpty:
		return refusal(ErrEmpty)
	}
	return nil
}

// refused is a pass a gate refused: it matches ErrRefused and its cause.
type refused struct{ cause error }

func refusal(cause error) error { return &refused{cause: cause} }

func (r *refused) Error() string { return ErrRefused.Error() + ": " + r.cause.Error() }

func (r *refused) Unwrap() []error { return []error{ErrRefused, r.cause} }

// notReady says whether err (a Ready error) is one the gate waits out
// quietly: before the first sync.
func notReady(err error) bool { return errors.Is(err, reconcile.ErrNotSynced) }
