package intent

import (
	"context"

	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/store"
)

// ForResource returns a Once for a resource.Resource whose Status holds
// the intent record in the field that field points to: Record reads it,
// Generation is the resource's Generation, and Write sets it in a copy of
// the status and writes that with resource.WriteStatus (a compare-and-swap
// that also records ObservedGeneration, and writes nothing when nothing
// changes). Set Find, Act and, for retries, Again on the result:
//
//	type Status struct {
//		Backup intent.Record[BackupResult] `json:"backup"`
//	}
//	once := intent.ForResource[Spec](func(st *Status) *intent.Record[BackupResult] { return &st.Backup })
//	once.Find, once.Act = backups.find, backups.start
func ForResource[Spec, Status, R any](field func(st *Status) *Record[R]) Once[*resource.Resource[Spec, Status], R] {
	type res = resource.Resource[Spec, Status]
	return Once[*res, R]{
		Record: func(v *res) Record[R] {
			st := v.Status
			return *field(&st)
		},
		Generation: func(v *res) int64 { return v.Generation },
		Write: func(ctx context.Context, s store.Store[*res], obj store.Object[*res], rec Record[R]) (store.Object[*res], error) {
			st := obj.Value.Status
			*field(&st) = rec
			return resource.WriteStatus(ctx, s, obj, st)
		},
	}
}
