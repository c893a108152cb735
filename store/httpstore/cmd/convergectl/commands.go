package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/httpstore"
)

// value is what convergectl stores: any JSON, kept as its bytes.
type value = json.RawMessage

// cli runs the commands against one server.
type cli struct {
	s       *httpstore.Client[value]
	timeout time.Duration
	stdin   io.Reader
	stdout  io.Writer
	stderr  io.Writer
}

// object is how objects and events are printed.
type object struct {
	Type           string `json:"type,omitempty"` // events only
	Key            string `json:"key"`
	Revision       int64  `json:"revision"`
	CreateRevision int64  `json:"createRevision,omitempty"`
	Value          value  `json:"value,omitempty"`
}

func printed(o store.Object[value]) object {
	return object{Key: o.Key, Revision: o.Revision, CreateRevision: o.CreateRevision, Value: o.Value}
}

func (c *cli) print(v any) error { return json.NewEncoder(c.stdout).Encode(v) }

// flags parses a command's flags and checks its argument count.
func (c *cli) flags(fs *flag.FlagSet, args []string, minArgs, maxArgs int) ([]string, error) {
	fs.SetOutput(c.stderr)
	if err := fs.Parse(args); err != nil || fs.NArg() < minArgs || fs.NArg() > maxArgs {
		return nil, errUsage
	}
	return fs.Args(), nil
}

// call bounds one request by the -timeout.
func (c *cli) call(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.timeout)
}

func (c *cli) get(ctx context.Context, args []string) error {
	args, err := c.flags(flag.NewFlagSet("get", flag.ContinueOnError), args, 1, 1)
	if err != nil {
		return err
	}
	ctx, cancel := c.call(ctx)
	defer cancel()
	obj, err := c.s.Get(ctx, args[0])
	if err != nil {
		return err
	}
	return c.print(printed(obj))
}

func (c *cli) list(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("list", flag.ContinueOnError)
	keys := fs.Bool("keys", false, `print one "KEY REVISION" line per object instead`)
	args, err := c.flags(fs, args, 0, 1)
	if err != nil {
		return err
	}
	prefix := ""
	if len(args) == 1 {
		prefix = args[0]
	}
	ctx, cancel := c.call(ctx)
	defer cancel()
	objs, rev, err := c.s.List(ctx, prefix)
	if err != nil {
		return err
	}
	if *keys {
		for _, o := range objs {
			fmt.Fprintf(c.stdout, "%s %d\n", o.Key, o.Revision)
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
}

// readValue reads the JSON in file ("" or "-": stdin).
func (c *cli) readValue(file string) (value, error) {
	var b []byte
	var err error
	if file == "" || file == "-" {
		b, err = io.ReadAll(io.LimitReader(c.stdin, httpstore.DefaultMaxBodyBytes+1))
	} else {
		b, err = os.ReadFile(file)
	}
	if err != nil {
		return nil, err
	}
	if !json.Valid(b) {
		return nil, fmt.Errorf("%w: the value is not valid JSON", store.ErrInvalid)
	}
	return value(strings.TrimSpace(string(b))), nil
}

func (c *cli) put(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("put", flag.ContinueOnError)
	create := fs.Bool("create", false, "only create: fail (exit 5) if the key exists")
	rev := fs.Int64("rev", 0, "only update, and only if the key is at this revision (exit 4 if not)")
	args, err := c.flags(fs, args, 1, 2)
	if err != nil || (*create && *rev != 0) || *rev < 0 {
		return errUsage
	}
	v, err := c.readValue(append(args, "")[1])
	if err != nil {
		return err
	}
	ctx, cancel := c.call(ctx)
	defer cancel()
	var obj store.Object[value]
	switch {
	case *create:
		obj, err = c.s.Create(ctx, args[0], v)
	case *rev > 0:
		obj, err = c.s.Update(ctx, args[0], v, *rev)
	default:
		obj, err = store.CreateOrUpdate(ctx, c.s, args[0], func(value, bool) (value, error) { return v, nil })
	}
	if err != nil {
		return err
	}
	return c.print(printed(obj))
}

func (c *cli) apply(ctx context.Context, args []string) error {
	args, err := c.flags(flag.NewFlagSet("apply", flag.ContinueOnError), args, 1, 2)
	if err != nil {
		return err
	}
	patch, err := c.readValue(append(args, "")[1])
	if err != nil {
		return err
	}
	ctx, cancel := c.call(ctx)
	defer cancel()
	obj, err := store.Modify(ctx, c.s, args[0], func(cur value) (value, error) { return mergePatch(cur, patch) })
	if err != nil {
		return err
	}
	return c.print(printed(obj))
}

func (c *cli) delete(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("delete", flag.ContinueOnError)
	rev := fs.Int64("rev", 0, "delete only if the key is at this revision (exit 4 if not)")
	args, err := c.flags(fs, args, 1, 1)
	if err != nil || *rev < 0 {
		return errUsage
	}
	ctx, cancel := c.call(ctx)
	defer cancel()
	key := args[0]
	var at int64
	if *rev > 0 {
		at, err = c.s.Delete(ctx, key, *rev)
	} else {
		at, err = c.deleteLatest(ctx, key)
	}
	if err != nil {
		return err
	}
	return c.print(object{Key: key, Revision: at})
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

func (c *cli) watch(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("watch", flag.ContinueOnError)
	after := fs.Int64("after", -1, "print the changes after this revision (default: from now on)")
	args, err := c.flags(fs, args, 0, 1)
	if err != nil || *after < -1 {
		return errUsage
	}
	prefix := ""
	if len(args) == 1 {
		prefix = args[0]
	}
	if *after < 0 {
		rctx, cancel := c.call(ctx)
		*after, err = c.s.Revision(rctx)
		cancel()
		if err != nil {
			return err
		}
	}
	w, err := c.s.Watch(ctx, prefix, *after)
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
