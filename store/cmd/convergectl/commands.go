package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/httpstore"
)

// value is what convergectl stores: any JSON, kept as its bytes.
type value = json.RawMessage

// cli is one run of convergectl: its flags, its server and its streams.
type cli struct {
	flags  globalFlags
	global *flag.FlagSet            // flags before the command, for the usage
	s      *httpstore.Client[value] // set once the command line is read, unless offline
	// offline: the command reads no store (snapshot inspect), so no
	// server need be named.
	offline bool
	stdin   io.Reader
	stdout  io.Writer
	stderr  io.Writer
}

// action is a command whose command line has been read: what is left is
// to run it against the server.
type action func(ctx context.Context) error

// command is one of convergectl's commands.
type command struct {
	name     string
	flags    string // the command's flags, as its synopsis writes them (its summary names the others)
	args     string // its arguments, as its synopsis writes them
	min, max int    // how many arguments it takes
	summary  string
	// prepare declares the command's flags on fs, calls args to read the
	// command line, checks what it read and returns the action to run.
	prepare func(c *cli, fs *flag.FlagSet, args func() ([]string, error)) (action, error)
}

// commands are convergectl's commands, in the order the usage lists them.
var commands = []*command{
	{name: "get", args: "KEY", min: 1, max: 1, prepare: (*cli).get,
		summary: "print the object as one JSON line (-o spec|status|metadata: that part; -o table: its kind's printer columns)"},
	{name: "list", flags: "[-keys] [-o table]", args: "[PREFIX]", min: 0, max: 1, prepare: (*cli).list,
		summary: "print the objects under PREFIX and the list's revision (-o table: their kinds' printer columns)"},
	{name: "put", flags: "[-create] [-rev R]", args: "KEY [FILE]", min: 1, max: 2, prepare: (*cli).put,
		summary: `write the JSON value in FILE (default or "-": stdin)`},
	{name: "apply", flags: "[-patch]", args: "KEY [FILE]", min: 1, max: 2, prepare: (*cli).apply,
		summary: "write what a resource states, keeping its status and the finalizers and owners it does not name; else merge a JSON merge patch (RFC 7386)"},
	{name: "status", args: "KEY [FILE]", min: 1, max: 2, prepare: (*cli).status,
		summary: "write a resource's status alone, keeping its spec (needs the API-server layer)"},
	{name: "delete", flags: "[-rev R]", args: "KEY", min: 1, max: 1, prepare: (*cli).delete,
		summary: "delete the key at its latest revision or at R, or mark it for its finalizers (-propagation P)"},
	{name: "watch", flags: "[-after R]", args: "[PREFIX]", min: 0, max: 1, prepare: (*cli).watch,
		summary: "print changes as JSON lines until interrupted"},
	{name: "snapshot", args: "save|inspect FILE", min: 2, max: 2, prepare: (*cli).snapshot,
		summary: "save the whole store to FILE as a snapshot; or check FILE and print its header, offline"},
}

// lookup returns the command called name, or nil.
func lookup(name string) *command {
	for _, c := range commands {
		if c.name == name {
			return c
		}
	}
	return nil
}

// read reads the command's part of the command line, args, and returns
// its action. A usage error it returns names the command.
func (cmd *command) read(c *cli, args []string) (action, error) {
	fs := quietFlagSet(cmd.name)
	act, err := cmd.prepare(c, fs, func() ([]string, error) {
		if err := fs.Parse(args); err != nil {
			return nil, flagError(err)
		}
		if n := fs.NArg(); n < cmd.min || n > cmd.max {
			return nil, usagef("want %s, got %s", cmd.args, arguments(n))
		}
		return fs.Args(), nil
	})
	if ue := (*usageError)(nil); errors.As(err, &ue) {
		ue.cmd, ue.fs = cmd, fs
	}
	return act, err
}

// object is how objects and events are printed.
type object struct {
	Type           string `json:"type,omitempty"` // events only
	Key            string `json:"key"`
	Revision       int64  `json:"revision"`
	CreateRevision int64  `json:"createRevision,omitempty"`
	Value          value  `json:"value,omitempty"`
	// Marked: a delete that only marked the object, whose finalizers
	// have yet to run.
	Marked bool `json:"marked,omitempty"`
}

func printed(o store.Object[value]) object {
	return object{Key: o.Key, Revision: o.Revision, CreateRevision: o.CreateRevision, Value: o.Value}
}

func (c *cli) print(v any) error { return json.NewEncoder(c.stdout).Encode(v) }

// note prints a line on stderr that is no error: what a command did
// besides what it printed.
func (c *cli) note(format string, args ...any) {
	fmt.Fprintf(c.stderr, "convergectl: "+format+"\n", args...)
}

// call bounds one request by -timeout (0: by ctx alone).
func (c *cli) call(ctx context.Context) (context.Context, context.CancelFunc) {
	if c.flags.timeout == 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, c.flags.timeout)
}

// revisionFlag checks a revision flag the command line gave: at least
// least (0 where any revision will do, 1 where an object's is required).
func revisionFlag(fs *flag.FlagSet, name string, rev, least int64) error {
	if isSet(fs, name) && rev < least {
		return usagef("-%s %d: want a revision, %d or more", name, rev, least)
	}
	return nil
}
