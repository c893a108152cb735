package externaltest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/store"
)

// retryPause is how long a wait pauses before it lists again after its
// store failed or its watch ended (compacted, lagging, unavailable).
const retryPause = 100 * time.Millisecond

// Converged reports whether r is Ready for its latest generation: it
// holds a condition of type resource.ConditionReady whose status is
// True, and its ObservedGeneration is its Generation (the Ready is about
// the spec the store holds, not an earlier one). A nil r is not.
func Converged[Spec, Status any](r *resource.Resource[Spec, Status]) bool {
	if r == nil {
		return false
	}
	c, ok := resource.FindCondition(r.Conditions, resource.ConditionReady)
	return ok && c.Status == resource.ConditionTrue && r.ObservedGeneration == r.Generation
}

// WaitFor waits until cond holds of the objects under prefix, as s holds
// them, and returns those objects by key. cond is checked on a List of
// prefix, then again each time the store's watch delivers changes (every
// change is applied before cond is checked again); no clock drives it. A
// watch that ends, or a store that fails, is followed by a new List after
// a pause of 100ms. Where one transaction writes several keys under
// prefix (etcd), cond may see some of them before the others.
//
// It blocks until cond holds, limit has passed, or t's context ends; in
// the last two cases it fails t (Fatalf) saying what it waited for, the
// keys it last saw and the store's last error. cond must not keep the
// map: WaitFor changes it. Call it from the test's goroutine.
func WaitFor[T any](t testing.TB, s store.Store[T], prefix string, limit time.Duration, what string, cond func(objs map[string]store.Object[T]) bool) map[string]store.Object[T] {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), limit)
	defer cancel()
	objs, err := await(ctx, s, prefix, cond)
	if err != nil {
		keys := slices.Sorted(maps.Keys(objs))
		t.Fatalf("externaltest: waiting for %s: %v after at most %v; under %q the store held %d keys %q", what, err, limit, prefix, len(keys), keys)
	}
	return objs
}

// WaitConverged waits until every one of keys is Converged in s at the
// same time, as WaitFor waits (driven by the store's watch). It blocks
// until they are, limit has passed, or t's context ends; in the last two
// cases it fails t (Fatalf) naming each key that had not converged and
// why, as the store last held it: absent, or its generation, observed
// generation and conditions (type, status, reason, message).
func WaitConverged[Spec, Status any](t testing.TB, s store.Store[*resource.Resource[Spec, Status]], limit time.Duration, keys ...string) {
	t.Helper()
	if len(keys) == 0 {
		return
	}
	type object = store.Object[*resource.Resource[Spec, Status]]
	notConverged := func(objs map[string]object) []string {
		var out []string
		for _, k := range keys {
			if obj, ok := objs[k]; !ok || !Converged(obj.Value) {
				out = append(out, k)
			}
		}
		return out
	}
	ctx, cancel := context.WithTimeout(t.Context(), limit)
	defer cancel()
	objs, err := await(ctx, s, commonPrefix(keys), func(objs map[string]object) bool { return len(notConverged(objs)) == 0 })
	if err == nil {
		return
	}
	var why []string
	for _, k := range notConverged(objs) {
		obj, ok := objs[k]
		if !ok {
			why = append(why, fmt.Sprintf("%q: absent", k))
			continue
		}
		why = append(why, fmt.Sprintf("%q: generation %d, observed %d; %s", k, obj.Value.Generation, obj.Value.ObservedGeneration, conditions(obj.Value.Conditions)))
	}
	t.Fatalf("externaltest: not converged (%v after at most %v): %s", err, limit, strings.Join(why, "; "))
}

// WaitGone waits until every one of keys is absent from s at the same
// time, as WaitFor waits (driven by the store's watch): over the
// API-server layer, until the finalizers that held each deletion are
// done. It blocks until they are, limit has passed, or t's context ends;
// in the last two cases it fails t (Fatalf) naming each key still there
// with its revision and its value as JSON (its metadata show what holds
// it), cut at 300 bytes.
func WaitGone[T any](t testing.TB, s store.Store[T], limit time.Duration, keys ...string) {
	t.Helper()
	if len(keys) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(t.Context(), limit)
	defer cancel()
	objs, err := await(ctx, s, commonPrefix(keys), func(objs map[string]store.Object[T]) bool {
		return !slices.ContainsFunc(keys, func(k string) bool { _, ok := objs[k]; return ok })
	})
	if err == nil {
		return
	}
	var left []string
	for _, k := range keys {
		if obj, ok := objs[k]; ok {
			left = append(left, fmt.Sprintf("%q at revision %d: %s", k, obj.Revision, describe(obj.Value)))
		}
	}
	t.Fatalf("externaltest: not gone (%v after at most %v): %s", err, limit, strings.Join(left, "; "))
}

// Delete deletes key from s at its current revision, as a person's
// delete does (convergectl delete): over the API-server layer, an object
// with finalizers is only marked for deletion. A delete that loses a race
// with another write of key (an operator's status write: store.ErrConflict)
// is made again at the newer revision, up to 100 times. It returns the
// revision of the delete. It fails t (Fatalf) if key is absent, the store
// fails otherwise, or the key is still contended after 100 tries.
func Delete[T any](t testing.TB, s store.Store[T], key string) int64 {
	t.Helper()
	const tries = 100
	for range tries {
		obj, err := s.Get(t.Context(), key)
		if err != nil {
			t.Fatalf("externaltest: delete %q: %v", key, err)
		}
		rev, err := s.Delete(t.Context(), key, obj.Revision)
		switch {
		case err == nil:
			return rev
		case !errors.Is(err, store.ErrConflict):
			t.Fatalf("externaltest: delete %q: %v", key, err)
		}
	}
	t.Fatalf("externaltest: delete %q: still in conflict after %d tries", key, tries)
	return 0
}

// await lists prefix and follows its watch until cond holds of the
// objects, and returns them with nil; or, once ctx ends, the objects last
// seen with ctx's error, joined with the store's last error if any.
func await[T any](ctx context.Context, s store.Store[T], prefix string, cond func(map[string]store.Object[T]) bool) (map[string]store.Object[T], error) {
	objs := map[string]store.Object[T]{}
	var last error
	for first := true; ; first = false {
		if !first {
			select {
			case <-ctx.Done():
				return objs, gaveUp(ctx, last)
			case <-time.After(retryPause):
			}
		}
		listed, rev, err := s.List(ctx, prefix)
		if err != nil {
			last = storeError(ctx, err, last)
			continue
		}
		clear(objs)
		for _, obj := range listed {
			objs[obj.Key] = obj
		}
		if cond(objs) {
			return objs, nil
		}
		done, err := follow(ctx, s, prefix, rev, objs, cond)
		if done {
			return objs, nil
		}
		last = storeError(ctx, err, last)
	}
}

// gaveUp is the error of a wait whose ctx ended: ctx's, and the store's
// last error if it had one.
func gaveUp(ctx context.Context, last error) error {
	if last == nil {
		return ctx.Err()
	}
	return fmt.Errorf("%w; the store's last error: %w", ctx.Err(), last)
}

// storeError returns err, the store's error, unless ctx's end caused it;
// then last.
func storeError(ctx context.Context, err, last error) error {
	if err == nil || ctx.Err() != nil {
		return last
	}
	return err
}

// follow applies the changes of prefix after rev to objs, checking cond
// once no more changes are waiting, and reports whether it held; else,
// once the watch ends, why it did.
func follow[T any](ctx context.Context, s store.Store[T], prefix string, rev int64, objs map[string]store.Object[T], cond func(map[string]store.Object[T]) bool) (bool, error) {
	w, err := s.Watch(ctx, prefix, rev)
	if err != nil {
		return false, err
	}
	defer w.Stop()
	events := w.Events()
	for ev := range events {
		apply(objs, ev)
		for more := true; more; {
			select {
			case ev, ok := <-events:
				if !ok {
					return false, w.Err()
				}
				apply(objs, ev)
			default:
				more = false
			}
		}
		if cond(objs) {
			return true, nil
		}
	}
	return false, w.Err()
}

// apply applies a watch's event to objs.
func apply[T any](objs map[string]store.Object[T], ev store.Event[T]) {
	switch ev.Type {
	case store.Created, store.Updated:
		objs[ev.Object.Key] = ev.Object
	case store.Deleted:
		delete(objs, ev.Object.Key)
	}
}

// commonPrefix returns the longest prefix of every one of keys that ends
// at a character's boundary.
func commonPrefix(keys []string) string {
	p := keys[0]
	for _, k := range keys[1:] {
		n := 0
		for n < len(p) && n < len(k) && p[n] == k[n] {
			n++
		}
		p = p[:n]
	}
	for !utf8.ValidString(p) {
		p = p[:len(p)-1]
	}
	return p
}

// conditions formats conds for a person: "Ready False (Reason): message".
func conditions(conds []resource.Condition) string {
	if len(conds) == 0 {
		return "no conditions"
	}
	out := make([]string, 0, len(conds))
	for _, c := range conds {
		out = append(out, fmt.Sprintf("%s %s (%s): %s", c.Type, c.Status, c.Reason, c.Message))
	}
	return strings.Join(out, ", ")
}

// describe returns v as JSON, cut at 300 bytes.
func describe(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%+v", v)
	}
	if len(b) > 300 {
		return string(b[:300]) + "..."
	}
	return string(b)
}
