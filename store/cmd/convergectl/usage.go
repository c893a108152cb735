package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
)

// usageError is a command line that cannot be read (exit 2), or a request
// for help (-h, exit 0). Its message names what is wrong; the usage printed
// after it is the command's if cmd is set, else convergectl's.
type usageError struct {
	msg  string
	help bool
	cmd  *command
	fs   *flag.FlagSet // cmd's flags
}

func (e *usageError) Error() string {
	if e.cmd != nil {
		return e.cmd.name + ": " + e.msg
	}
	return e.msg
}

// usagef returns the usage error that format describes.
func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// flagError turns an error of fs.Parse into a usage error.
func flagError(err error) error {
	if err == flag.ErrHelp {
		return &usageError{help: true}
	}
	return &usageError{msg: err.Error()}
}

// printUsage prints the usage that follows e: the command's synopsis and
// flags, or convergectl's commands and global flags (global).
func (e *usageError) printUsage(w io.Writer, global *flag.FlagSet) {
	if e.cmd == nil {
		fmt.Fprint(w, usageHead)
		for _, c := range commands {
			line := c.synopsis()
			if len(line) > 31 {
				fmt.Fprintf(w, "  %s\n  %31s %s\n", line, "", c.summary)
			} else {
				fmt.Fprintf(w, "  %-31s %s\n", line, c.summary)
			}
		}
		fmt.Fprint(w, usageTail)
		printDefaults(w, global)
		return
	}
	fmt.Fprintf(w, "Usage: convergectl [flags] %s\n\n%s.\n", e.cmd.synopsis(), e.cmd.summary)
	if hasFlags(e.fs) {
		fmt.Fprint(w, "\nFlags:\n")
		printDefaults(w, e.fs)
	}
	fmt.Fprint(w, "\nRun \"convergectl -h\" for the flags before the command.\n")
}

const usageHead = `Usage: convergectl [flags] COMMAND [ARGS]

Commands:
`

const usageTail = `
Run "convergectl COMMAND -h" for a command's flags.
Exit codes: 0 done, 1 error, 2 usage, 3 not found, 4 conflict, 5 exists, 6 refused.

Flags:
`

// printDefaults prints fs's flags on w.
func printDefaults(w io.Writer, fs *flag.FlagSet) {
	out := fs.Output()
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(out)
}

func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

// isSet reports whether the command line gave the flag name.
func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// arguments says how many arguments n is, as a usage message does.
func arguments(n int) string {
	switch n {
	case 0:
		return "no arguments"
	case 1:
		return "1 argument"
	}
	return fmt.Sprintf("%d arguments", n)
}

// quietFlagSet returns a flag set that prints nothing itself: convergectl
// prints its usage errors, one line each.
func quietFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// synopsis is how the command is written after "convergectl [flags] ".
func (c *command) synopsis() string {
	return strings.Join(strings.Fields(c.name+" "+c.flags+" "+c.args), " ")
}
