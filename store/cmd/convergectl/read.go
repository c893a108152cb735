package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/converge-go/converge/store"
)

// The commands that read: get, list and watch.

func (c *cli) get(fs *flag.FlagSet, parse func() ([]string, error)) (action, error) {
	part := fs.String("o", "json", "what to print: `json` (the object), or the spec, status or metadata of a resource, as one JSON line, or a table of the printer columns its kind declares")
	args, err := parse()
	if err != nil {
		return nil, err
	}
	switch *part {
	case "json", "spec", "status", "metadata", "table":
	default:
		return nil, usagef("-o %q: want json, spec, status, metadata or table", *part)
	}
	return func(ctx context.Context) error {
		ctx, cancel := c.call(ctx)
		defer cancel()
		obj, err := c.s.Get(ctx, args[0])
		if err != nil {
			return err
		}
		switch *part {
		case "json":
			return c.print(printed(obj))
		case "table":
			return c.printTable(ctx, []store.Object[value]{obj})
		}
		v, err := partOf(obj.Value, *part)
		if err != nil {
			return fmt.Errorf("%w: %s: the value is no resource: %s", errInvalid, args[0], err)
		}
		return c.print(v)
	}, nil
}

// partOf returns one part of a resource, as apistore.JSONKind reads it:
// its spec (null if it has none), its status (an object of every member
// but metadata and spec) or its metadata (apistore.Meta: generation,
// finalizers, the deletion mark, owners). A value that is not a JSON
// object, or whose metadata is not apistore.Meta, is no resource: the
// error says why, without a package's name.
func partOf(v value, part string) (any, error) {
	m, err := kind.Meta(v)
	if err != nil {
		return nil, errors.New(reason(err))
	}
	if part == "metadata" {
		return m, nil
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(v, &members); err != nil {
		return nil, err
	}
	if part == "spec" {
		if spec, ok := members["spec"]; ok {
			return spec, nil
		}
		return json.RawMessage("null"), nil
	}
	delete(members, "metadata")
	delete(members, "spec")
	return members, nil
}

func (c *cli) list(fs *flag.FlagSet, parse func() ([]string, error)) (action, error) {
	keys := fs.Bool("keys", false, `print one "KEY REVISION" line per object instead, KEY quoted if it holds a space, a quote, a backslash or an unprintable character`)
	format := fs.String("o", "json", "what to print: `json`, or a table of the printer columns each object's kind declares")
	args, err := parse()
	if err != nil {
		return nil, err
	}
	if *format != "json" && *format != "table" {
		return nil, usagef("-o %q: want json or table", *format)
	}
	prefix := strings.Join(args, "")
	return func(ctx context.Context) error {
		ctx, cancel := c.call(ctx)
		defer cancel()
		objs, rev, err := c.s.List(ctx, prefix)
		if err != nil {
			return err
		}
		if *format == "table" {
			return c.printTable(ctx, objs)
		}
		if *keys {
			for _, o := range objs {
				fmt.Fprintf(c.stdout, "%s %d\n", keyField(o.Key), o.Revision)
			}
			return nil
		}
		out := struct {
			Revision int64    `json:"revision"`
			Objects  []object `json:"objects"`
		}{Revision: rev, Objects: make([]object, 0, len(objs))}
		for _, o := range objs {
			out.Objects = append(out.Objects, printed(o))
		}
		return c.print(out)
	}, nil
}

// keyField returns key as list -keys prints it: as it is, unless a
// line-oriented reader could misread it (a space splits the line, a
// newline or other unprintable character breaks or hides it, a quote or
// backslash could be taken for quoting), then quoted by strconv.Quote.
func keyField(key string) string {
	q := strconv.Quote(key)
	if q[1:len(q)-1] != key || strings.ContainsRune(key, ' ') {
		return q
	}
	return key
}

func (c *cli) watch(fs *flag.FlagSet, parse func() ([]string, error)) (action, error) {
	after := fs.Int64("after", 0, "print the changes after this revision (default: from now on)")
	args, err := parse()
	if err != nil {
		return nil, err
	}
	if err := revisionFlag(fs, "after", *after, 0); err != nil {
		return nil, err
	}
	fromNow := !isSet(fs, "after")
	prefix := strings.Join(args, "")
	return func(ctx context.Context) error {
		from := *after
		if fromNow {
			rctx, cancel := c.call(ctx)
			rev, err := c.s.Revision(rctx)
			cancel()
			if err != nil {
				return err
			}
			from = rev
		}
		return c.printChanges(ctx, prefix, from)
	}, nil
}

// printChanges prints the changes under prefix after revision after, one
// JSON line each, until ctx is done.
func (c *cli) printChanges(ctx context.Context, prefix string, after int64) error {
	w, err := c.s.Watch(ctx, prefix, after)
	if err != nil {
		return ignoreInterrupt(ctx, err)
	}
	defer w.Stop()
	for ev := range w.Events() {
		if ev.Type == store.Progress {
			continue
		}
		o := printed(ev.Object)
		o.Type = strings.ToLower(ev.Type.String())
		if err := c.print(o); err != nil {
			return err
		}
	}
	return ignoreInterrupt(ctx, w.Err())
}

// ignoreInterrupt drops the error of a watch that ended because the user
// interrupted it.
func ignoreInterrupt(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}
