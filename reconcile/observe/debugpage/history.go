package debugpage

import "github.com/converge-go/converge/reconcile"

// historyView is reconcile.Health.History, for a controller that found its
// store to be another history at least once: how many times, and the
// latest's reason (store.AnotherIdentity or store.RolledBack),
// time, and the revisions of the cache before and of the store's list.
type historyView struct {
	Changes int    `json:"changes"`
	Reason  string `json:"reason"`
	At      string `json:"at"`
	From    int64  `json:"from"`
	To      int64  `json:"to"`
}

// historyOf describes h; nil while the store has been one history.
func historyOf(h reconcile.History) *historyView {
	if h.Changes == 0 {
		return nil
	}
	return &historyView{Changes: h.Changes, Reason: string(h.Reason), At: timestamp(h.At), From: h.From, To: h.To}
}
