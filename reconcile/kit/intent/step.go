package intent

import (
	"context"
	"fmt"

	"github.com/converge-go/converge/internal/nilness"
	"github.com/converge-go/converge/reconcile/tracing"
	"github.com/converge-go/converge/store"
)

// Step carries the pattern forward for obj, as read from s (in a
// reconcile: Request.Object and Request.Store), and returns what it did.
// It takes Decide's decisions one after another until it must wait or is
// done:
//
//   - Begin records the intent of a new attempt (Write, a compare-and-swap:
//     if it fails, nothing was done) and goes on with it as a pending one.
//   - A pending attempt is looked for in the world (Find) before anything
//     is done for it, a new one included (an ID the world already knows,
//     its record lost, is judged, not acted on again): Act acts under its
//     ID, Adopt returns with Outcome.Running, Judge records its result.
//   - Once an attempt's result is recorded (Write), Step returns: with
//     Outcome.Next if another attempt is wanted, settled otherwise.
//
// So an attempt is acted on only once its intent is in the store, only
// while the world has nothing of it, and at most once per call; a crash at
// any point leaves a record that the next Step adopts or judges. An error
// (Write's, Find's, Act's, or ctx's) is returned with the Outcome so far;
// the record stays as last written, and the next Step takes it up. A
// conflict (store.ErrConflict) means the object changed: reconcile the
// newer one. Bad input returns an error matching ErrInvalid.
func (o *Once[T, R]) Step(ctx context.Context, s store.Store[T], obj store.Object[T]) (Outcome[T, R], error) {
	out := Outcome[T, R]{Object: obj}
	if err := o.check(obj); err != nil {
		return out, err
	}
	out.Record = o.Record(obj.Value)
	gen := o.Generation(obj.Value)
	for recorded := false; ; {
		rec := out.Record
		var found Found[R]
		if rec.Pending() {
			var err error
			if found, err = o.find(ctx, rec.ID); err != nil {
				return out, err
			}
		}
		again := rec.Done && rec.Generation == gen && o.Again != nil && o.Again(rec)
		d := Decide(rec, gen, again, found.State)
		switch {
		case d == Done && recorded:
			return out, nil
		case d == Begin && recorded:
			out.Next = true
			return out, nil
		}
		out.Decisions = append(out.Decisions, d)
		var err error
		switch d {
		case Done:
			return out, nil
		case Begin:
			err = o.begin(ctx, s, &out, gen)
		case Adopt:
			out.Running = true
			return out, nil
		case Act:
			if found, err = o.act(ctx, rec.ID); err == nil && found.State == Running {
				out.Running = true
				return out, nil
			}
			fallthrough
		case Judge:
			if err == nil {
				err = o.record(ctx, s, &out, found.Result)
				recorded = true
			}
		}
		if err != nil {
			return out, err
		}
	}
}

// begin records the intent of the next attempt for generation gen.
func (o *Once[T, R]) begin(ctx context.Context, s store.Store[T], out *Outcome[T, R], gen int64) error {
	attempt := 1
	if out.Record.ID != "" && out.Record.Generation == gen {
		attempt = out.Record.Attempt + 1
	}
	obj := out.Object
	rec := Record[R]{ID: ID(obj.Key, obj.CreateRevision, gen, attempt), Generation: gen, Attempt: attempt}
	return o.write(ctx, s, out, rec)
}

// record records res as the result of the pending attempt.
func (o *Once[T, R]) record(ctx context.Context, s store.Store[T], out *Outcome[T, R], res R) error {
	rec := out.Record
	rec.Done, rec.Result = true, res
	return o.write(ctx, s, out, rec)
}

// write writes rec and checks that the object written holds it, so that a
// Write that loses the record fails instead of beginning attempts forever.
func (o *Once[T, R]) write(ctx context.Context, s store.Store[T], out *Outcome[T, R], rec Record[R]) error {
	written, err := o.Write(ctx, s, out.Object, rec)
	if err != nil {
		return err
	}
	if nilness.Is(any(written.Value)) {
		return fmt.Errorf("%w: %q: Write returned no value", ErrInvalid, out.Object.Key)
	}
	got := o.Record(written.Value)
	if got.ID != rec.ID || got.Done != rec.Done {
		return fmt.Errorf("%w: %q: Write did not store the record of attempt %s", ErrInvalid, out.Object.Key, rec.ID)
	}
	out.Object, out.Record = written, got
	return nil
}

// find asks the world about attempt id: inside a traced reconcile, a
// span "intent find" (tracing.StartCall).
func (o *Once[T, R]) find(ctx context.Context, id string) (Found[R], error) {
	if err := ctx.Err(); err != nil {
		return Found[R]{}, err
	}
	ctx, end := tracing.StartCall(ctx, "intent find")
	found, err := o.Find(ctx, id)
	end(err)
	if err != nil {
		return found, fmt.Errorf("intent: find attempt %s: %w", id, err)
	}
	if found.State != Absent && found.State != Running && found.State != Finished {
		return found, fmt.Errorf("%w: Find: attempt %s: unknown state %d", ErrInvalid, id, found.State)
	}
	return found, nil
}

// act acts under id: inside a traced reconcile, a span "intent act".
func (o *Once[T, R]) act(ctx context.Context, id string) (Found[R], error) {
	if err := ctx.Err(); err != nil {
		return Found[R]{}, err
	}
	ctx, end := tracing.StartCall(ctx, "intent act")
	found, err := o.Act(ctx, id)
	end(err)
	if err != nil {
		return found, fmt.Errorf("intent: act under %s: %w", id, err)
	}
	if found.State != Running && found.State != Finished {
		return found, fmt.Errorf("%w: Act: attempt %s: state %v (want Running or Finished)", ErrInvalid, id, found.State)
	}
	return found, nil
}
