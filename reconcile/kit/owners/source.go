package owners

import (
	"slices"
	"strings"

	"github.com/converge-go/converge/internal/nilness"
	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
)

// Source wakes, in the controller it is given to, the owners of the
// objects of s under prefix (controller-runtime's Owns): every change of
// a child — created, updated, deleted — hands in the key of every owner it
// names, before the change and after it, so that a child moved from one
// owner to another wakes both. A controller of ReplicaSets given a Source
// of its Pods reconciles a ReplicaSet whenever one of its Pods changes:
//
//	ctrl, err := reconcile.New(replicaSets, rec, reconcile.Options[*RS]{
//		Name:    "replicasets",
//		Prefix:  "replicasets/",
//		Sources: []reconcile.Source{owners.Source(pods, "pods/", resource.Kind[PodSpec, PodStatus]{})},
//	})
//
// It is reconcile.FromStore with Mapper(kind, ""): its own cache of s
// under prefix, which reports itself degraded while s is unreachable. The
// controller refuses an owner key outside its view (another prefix), as
// it refuses any key a source hands in, and counts it in Health.Refused:
// an owner under another prefix needs a controller of its own, and
// children owned by objects of several prefixes want
// reconcile.FromStore(s, prefix, Mapper(kind, ownerPrefix)) instead, one
// per controller. A value whose metadata kind cannot read wakes nothing;
// a nil kind makes a source that fails to start, with an error matching
// store.ErrInvalid.
func Source[C any](s store.Store[C], prefix string, kind apistore.Kind[C]) reconcile.Source {
	return reconcile.FromStore(s, prefix, Mapper(kind, ""))
}

// Mapper returns a mapper for reconcile.FromStore that maps a change of a
// child (old nil for a new child, cur nil for a deleted one) to the keys
// of the owners it names under ownerPrefix ("" for every owner), before
// and after the change, each once, in the order they are named. It
// returns nil for a nil kind (FromStore then fails to start, with an
// error matching store.ErrInvalid).
func Mapper[C any](kind apistore.Kind[C], ownerPrefix string) func(old, cur *store.Object[C]) []string {
	if nilness.Is(kind) {
		return nil
	}
	return func(old, cur *store.Object[C]) []string {
		var keys []string
		for _, obj := range []*store.Object[C]{old, cur} {
			if obj == nil {
				continue
			}
			m, err := kind.Meta(obj.Value)
			if err != nil {
				continue
			}
			for _, ref := range m.Owners {
				if strings.HasPrefix(ref.Key, ownerPrefix) && !slices.Contains(keys, ref.Key) {
					keys = append(keys, ref.Key)
				}
			}
		}
		return keys
	}
}
