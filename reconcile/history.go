package reconcile

import "github.com/converge-go/converge/reconcile/internal/cache"

// Another history: the store the cache follows is not the history the
// cache reflects. Either it answers another identity (store.Identifier:
// restored from a snapshot, or replaced), or, under the same identity, its
// revision is below the cache's (its file or data restored from an older
// copy, or a checkpoint newer than the store it was read from). Its
// revisions then say nothing of the ones the cache holds, so the cache
// re-lists it whole: every key it holds is reported as changed, every key
// it lacks as deleted with its last value, and the ledger is rebased on it
// (replaced.go). Health.History reports it.

// History is what a controller reports of the times it found its store to
// be another history (Health.History): how many since New, and the
// latest's reason (store.AnotherIdentity or store.RolledBack), time, and
// the revisions of the cache before and of the store's list. Each time,
// the cache re-listed the store whole, every key of it was reconciled from
// the store's value, and every key it lacks as deleted with the last value
// the cache held.
type History = cache.History
