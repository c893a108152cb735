package main

import (
	"context"
	"errors"
	"flag"

	"github.com/converge-go/converge/store"
)

// The commands that write: put, apply and delete.

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

func (c *cli) apply(_ *flag.FlagSet, parse func() ([]string, error)) (action, error) {
	args, err := parse()
	if err != nil {
		return nil, err
	}
	key, file := args[0], append(args, "")[1]
	return func(ctx context.Context) error {
		patch, err := c.readValue(file)
		if err != nil {
			return err
		}
		ctx, cancel := c.call(ctx)
		defer cancel()
		obj, err := store.Modify(ctx, c.s, key, func(cur value) (value, error) { return mergePatch(cur, patch) })
		if err != nil {
			return err
		}
		return c.print(printed(obj))
	}, nil
}

func (c *cli) delete(fs *flag.FlagSet, parse func() ([]string, error)) (action, error) {
	rev := fs.Int64("rev", 0, "delete only if the key is at this revision (exit 4 if not)")
	args, err := parse()
	if err != nil {
		return nil, err
	}
	if err := revisionFlag(fs, "rev", *rev, 1); err != nil {
		return nil, err
	}
	key := args[0]
	return func(ctx context.Context) error {
		ctx, cancel := c.call(ctx)
		defer cancel()
		var at int64
		var err error
		if isSet(fs, "rev") {
			at, err = c.s.Delete(ctx, key, *rev)
		} else {
			at, err = c.deleteLatest(ctx, key)
		}
		if err != nil {
			return err
		}
		return c.print(object{Key: key, Revision: at})
	}, nil
}

// deleteLatest deletes key at the revision it reads, reading again if a
// write slips in between.
func (c *cli) deleteLatest(ctx context.Context, key string) (int64, error) {
	for {
		obj, err := c.s.Get(ctx, key)
		if err != nil {
			return 0, err
		}
		at, err := c.s.Delete(ctx, key, obj.Revision)
		if !errors.Is(err, store.ErrConflict) || ctx.Err() != nil {
			return at, err
		}
	}
}
