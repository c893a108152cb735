package main

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
)

// The commands that write: put, apply, status and delete.

func (c *cli) put(fs *flag.FlagSet, parse func() ([]string, error)) (action, error) {
	create := fs.Bool("create", false, "only create: fail (exit 5) if the key exists")
	rev := fs.Int64("rev", 0, "only update, and only if the key is at this revision (exit 4 if not)")
	args, err := parse()
	if err != nil {
		return nil, err
	}
	if err := revisionFlag(fs, "rev", *rev, 1); err != nil {
		return nil, err
	}
	if *create && isSet(fs, "rev") {
		return nil, usagef("-create and -rev together: a key to create has no revision yet")
	}
	key, file := args[0], append(args, "")[1]
	return func(ctx context.Context) error {
		v, err := c.readValue(file)
		if err != nil {
			return err
		}
		ctx, cancel := c.call(ctx)
		defer cancel()
		var obj store.Object[value]
		switch {
		case *create:
			obj, err = c.s.Create(ctx, key, v)
		case isSet(fs, "rev"):
			obj, err = c.s.Update(ctx, key, v, *rev)
		default:
			obj, err = store.CreateOrUpdate(ctx, c.s, key, func(value, bool) (value, error) { return v, nil })
		}
		if err != nil {
			return err
		}
		return c.print(printed(obj))
	}, nil
}

func (c *cli) apply(fs *flag.FlagSet, parse func() ([]string, error)) (action, error) {
	patch := fs.Bool("patch", false, "merge FILE as a JSON merge patch even if it is a resource (to change some members of a spec)")
	return c.withValue(parse, func(ctx context.Context, key string, v value) error {
		ctx, cancel := c.call(ctx)
		defer cancel()
		var obj store.Object[value]
		var err error
		if *patch || !isResource(v) {
			obj, err = store.Modify(ctx, c.s, key, func(cur value) (value, error) { return patched(cur, v) })
		} else {
			obj, err = c.applyResource(ctx, key, v)
		}
		if err != nil {
			return err
		}
		return c.print(printed(obj))
	})
}

// withValue parses KEY [FILE] and returns the action that reads FILE's
// value (standard input without one) and calls do with it.
func (c *cli) withValue(parse func() ([]string, error), do func(ctx context.Context, key string, v value) error) (action, error) {
	args, err := parse()
	if err != nil {
		return nil, err
	}
	key, file := args[0], append(args, "")[1]
	return func(ctx context.Context) error {
		v, err := c.readValue(file)
		if err != nil {
			return err
		}
		return do(ctx, key, v)
	}, nil
}

func (c *cli) status(_ *flag.FlagSet, parse func() ([]string, error)) (action, error) {
	return c.withValue(parse, func(ctx context.Context, key string, v value) error {
		if _, err := kind.Meta(v); err != nil {
			return fmt.Errorf("%w: %s", errInvalid, reason(err))
		}
		ctx, cancel := c.call(ctx)
		defer cancel()
		obj, err := store.Modify[value](ctx, statusWriting{c.s}, key, func(value) (value, error) { return v, nil })
		if err != nil {
			return withoutLayer(err)
		}
		return c.print(printed(obj))
	})
}

func (c *cli) delete(fs *flag.FlagSet, parse func() ([]string, error)) (action, error) {
	rev := fs.Int64("rev", 0, "delete only if the key is at this revision (exit 4 if not)")
	prop := fs.String("propagation", "background", "what becomes of the resource's children: `background`, foreground or orphan (the last two need a server with the API-server layer)")
	args, err := parse()
	if err != nil {
		return nil, err
	}
	if err := revisionFlag(fs, "rev", *rev, 1); err != nil {
		return nil, err
	}
	p := apistore.Propagation(*prop)
	if p != apistore.Background && p != apistore.Foreground && p != apistore.Orphan {
		return nil, usagef("-propagation %q: want background, foreground or orphan", *prop)
	}
	key := args[0]
	return func(ctx context.Context) error {
		ctx, cancel := c.call(ctx)
		defer cancel()
		var at int64
		var marked bool
		var err error
		if isSet(fs, "rev") {
			at, marked, err = c.s.DeleteWith(ctx, key, *rev, p)
		} else {
			at, marked, err = c.deleteLatest(ctx, key, p)
		}
		if err != nil {
			return withoutLayer(err)
		}
		if marked {
			c.noteMarked(ctx, key)
		}
		return c.print(object{Key: key, Revision: at, Marked: marked})
	}, nil
}

// deleteLatest deletes key at the revision it reads, reading again if a
// write slips in between.
func (c *cli) deleteLatest(ctx context.Context, key string, p apistore.Propagation) (int64, bool, error) {
	for {
		obj, err := c.s.Get(ctx, key)
		if err != nil {
			return 0, false, err
		}
		at, marked, err := c.s.DeleteWith(ctx, key, obj.Revision, p)
		if !errors.Is(err, store.ErrConflict) || ctx.Err() != nil {
			return at, marked, err
		}
	}
}

// noteMarked tells, on stderr, that key was only marked for deletion and
// which finalizers it waits for, as a read after the mark shows them.
func (c *cli) noteMarked(ctx context.Context, key string) {
	obj, err := c.s.Get(ctx, key)
	if err != nil {
		c.note("%s: marked for deletion; waiting for its finalizers", key)
		return
	}
	m, err := kind.Meta(obj.Value)
	if err != nil {
		c.note("%s: marked for deletion; waiting for its finalizers", key)
		return
	}
	c.note("%s: marked for deletion; waiting for finalizers %v", key, m.Finalizers)
}
