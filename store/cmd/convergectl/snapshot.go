package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/converge-go/converge/store/snapshot"
)

// The snapshot command: save a served store to a file, or inspect a file
// (offline).

// snapshotInfo is how a snapshot is printed.
type snapshotInfo struct {
	File     string    `json:"file"`
	Version  int       `json:"version"`
	Identity string    `json:"identity,omitempty"`
	Revision int64     `json:"revision"`
	Time     time.Time `json:"time"`
	Objects  int       `json:"objects"`
	Checksum string    `json:"checksum,omitempty"`
	// OK: the whole snapshot checked (count, order, checksum).
	OK bool `json:"ok"`
}

func printedInfo(file string, info snapshot.Info, ok bool) snapshotInfo {
	return snapshotInfo{
		File: file, Version: info.Version, Identity: info.Identity, Revision: info.Revision,
		Time: info.Time, Objects: info.Count, Checksum: info.Checksum, OK: ok,
	}
}

func (c *cli) snapshot(fs *flag.FlagSet, parse func() ([]string, error)) (action, error) {
	args, err := parse()
	if err != nil {
		return nil, err
	}
	verb, file := args[0], args[1]
	switch verb {
	case "save":
		return func(ctx context.Context) error { return c.saveSnapshot(ctx, file) }, nil
	case "inspect":
		c.offline = true
		return func(context.Context) error { return c.inspectSnapshot(file) }, nil
	}
	return nil, usagef("%q: want save or inspect", verb)
}

// saveSnapshot saves a snapshot of the whole served store to file ("-":
// stdout, which then holds the snapshot alone), whole or not at all, and
// prints what it holds.
func (c *cli) saveSnapshot(ctx context.Context, file string) error {
	ctx, cancel := c.call(ctx)
	defer cancel()
	src := snapshot.Typed(c.s, nil)
	if file == "-" {
		_, err := snapshot.Save(ctx, c.stdout, src)
		return err
	}
	info, err := snapshot.WriteFile(ctx, file, src)
	if err != nil {
		return err
	}
	return c.print(printedInfo(file, info, true))
}

// inspectSnapshot prints the header of the snapshot in file and checks the
// whole of it: a damaged snapshot is printed with "ok": false as far as
// its header reads, and is an error.
func (c *cli) inspectSnapshot(file string) error {
	var r io.Reader = c.stdin
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return err
		}
		defer f.Close()
		r = f
	}
	rd, err := snapshot.NewReader(r)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	for err == nil {
		_, err = rd.Next()
	}
	if err != io.EOF {
		if perr := c.print(printedInfo(file, rd.Info(), false)); perr != nil {
			return perr
		}
		return fmt.Errorf("%s: %w", file, err)
	}
	return c.print(printedInfo(file, rd.Info(), true))
}
