package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
	"github.com/converge-go/converge/store/httpstore"
)

// errUsage marks a command line the command cannot read: exit code 2.
var errUsage = errors.New("usage")

// clientFlags are the flags of every command that talks to a daemon.
type clientFlags struct {
	dir, server, token, tokenFile string
}

func (c *clientFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.dir, "dir", envOr("JOBS_DIR", ".jobs"), "the daemon's directory, whose "+URLFile+" names the server ($JOBS_DIR)")
	fs.StringVar(&c.server, "server", os.Getenv("JOBS_SERVER"), "the store's URL: the daemon's, such as http://127.0.0.1:7007/store, or the store server's of a daemon run with -store-server ($JOBS_SERVER; default: read from -dir)")
	fs.StringVar(&c.token, "token", "", "bearer token (default $JOBS_TOKEN, else the daemon's "+TokenFile+" file in -dir when -server is not given)")
	fs.StringVar(&c.tokenFile, "token-file", "", "read the bearer token from this file (yours, mode 0600), such as a store server's token file")
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// client returns a store client of the daemon. The token is -token, else
// $JOBS_TOKEN, else, when the URL comes from the daemon's directory, the
// daemon's TokenFile there (none if there is no such file): a daemon's
// token is never sent to a server named by -server.
func (c *clientFlags) client() (*httpstore.Client[*Job], error) {
	url, token := c.server, c.token
	if token == "" && c.tokenFile != "" {
		tok, ok, err := readTokenFile(c.tokenFile)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("-token-file: %s: no such file", c.tokenFile)
		}
		token = tok
	}
	if token == "" {
		token = os.Getenv("JOBS_TOKEN")
	}
	if url == "" {
		b, err := os.ReadFile(filepath.Join(c.dir, URLFile))
		if err != nil {
			return nil, fmt.Errorf("no -server, and no daemon found in %s: %w", c.dir, err)
		}
		url = strings.TrimSpace(string(b))
		if token == "" {
			if token, _, err = readTokenFile(filepath.Join(c.dir, TokenFile)); err != nil {
				return nil, err
			}
		}
	}
	var opts []httpstore.ClientOption
	if token != "" {
		opts = append(opts, httpstore.WithToken(token))
	}
	return httpstore.New[*Job](url, opts...)
}

// connect parses a client command's flags (fs may hold more of them) and
// returns its arguments and a client; wantArgs checks how many arguments
// the command takes.
func connect(fs *flag.FlagSet, args []string, wantArgs func(n int) bool) ([]string, *httpstore.Client[*Job], error) {
	var cf clientFlags
	cf.register(fs)
	if err := fs.Parse(args); err != nil || !wantArgs(fs.NArg()) {
		return nil, nil, errUsage
	}
	s, err := cf.client()
	return fs.Args(), s, err
}

func someArgs(n int) bool { return n > 0 }
func noArgs(n int) bool   { return n == 0 }

// addJob creates job name with spec. Adding the same spec again is a
// no-op (so a retried add is safe); another spec under the name is refused.
func addJob(ctx context.Context, s store.Store[*Job], name string, spec Spec) (store.Object[*Job], bool, error) {
	key := KeyPrefix + name
	obj, err := s.Create(ctx, key, &Job{Meta: apistore.Meta{Generation: 1}, Spec: spec})
	if err == nil {
		return obj, true, nil
	}
	if !errors.Is(err, store.ErrExists) {
		return obj, false, err
	}
	cur, err := s.Get(ctx, key)
	if err != nil {
		return cur, false, err
	}
	if cur.Value.Deleting() {
		return cur, false, fmt.Errorf("job %s is being deleted, waiting for its attempt to stop: add it again once it is gone: %w", name, store.ErrExists)
	}
	if !sameSpec(cur.Value.Spec, spec) {
		return cur, false, fmt.Errorf("job %s exists with another spec (delete it first): %w", name, store.ErrExists)
	}
	return cur, false, nil
}

func sameSpec(a, b Spec) bool {
	return a.Command == b.Command && slices.Equal(a.Args, b.Args) && a.Retries == b.Retries && a.Timeout == b.Timeout
}

// parseAdd reads "[flags] NAME -- COMMAND [ARG...]".
func parseAdd(fs *flag.FlagSet, args []string) (string, Spec, error) {
	retries := fs.Int("retries", 0, "failed attempts to retry (a job runs at most 1+retries times)")
	timeout := fs.Duration("timeout", 0, "bound on each attempt (0: none)")
	if err := fs.Parse(args); err != nil {
		return "", Spec{}, errUsage
	}
	rest := fs.Args()
	if len(rest) < 3 || rest[1] != "--" || !validName(rest[0]) || *retries < 0 || *timeout < 0 {
		return "", Spec{}, errUsage
	}
	return rest[0], Spec{Command: rest[2], Args: rest[3:], Retries: *retries, Timeout: Duration(*timeout)}, nil
}

// validName accepts 1 to 64 letters, digits, '.', '-' and '_'.
func validName(name string) bool {
	if name == "" || len(name) > 64 {
		return false
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// cmdAdd: jobs add [-retries N] [-timeout D] NAME -- COMMAND [ARG...]
func cmdAdd(ctx context.Context, args []string, out io.Writer) error {
	return add(ctx, "add", args, out, false)
}

// cmdRun: jobs run [-retries N] [-timeout D] NAME -- COMMAND [ARG...]: add,
// then wait until the job is final, printing its progress.
func cmdRun(ctx context.Context, args []string, out io.Writer) error {
	return add(ctx, "run", args, out, true)
}

// add adds the job of the command line, then waits for it if wait is set.
func add(ctx context.Context, cmd string, args []string, out io.Writer, wait bool) error {
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	var cf clientFlags
	cf.register(fs)
	name, spec, err := parseAdd(fs, args)
	if err != nil {
		return err
	}
	s, err := cf.client()
	if err != nil {
		return err
	}
	defer s.Close()
	obj, created, err := addJob(ctx, s, name, spec)
	switch {
	case err != nil:
		return err
	case wait:
		return waitJobs(ctx, s, []string{name}, out)
	case created:
		fmt.Fprintf(out, "added %s (revision %d)\n", name, obj.Revision)
	default:
		fmt.Fprintf(out, "%s exists with this spec (revision %d)\n", name, obj.Revision)
	}
	return nil
}

// cmdWait: jobs wait NAME...: wait until every named job is final; an error
// if one failed.
func cmdWait(ctx context.Context, args []string, out io.Writer) error {
	names, s, err := connect(flag.NewFlagSet("wait", flag.ContinueOnError), args, someArgs)
	if err != nil {
		return err
	}
	defer s.Close()
	return waitJobs(ctx, s, names, out)
}

// waitJobs polls the named jobs until each is final, printing each one's
// messages as they change. It keeps polling through a daemon's restart.
func waitJobs(ctx context.Context, s store.Store[*Job], names []string, out io.Writer) error {
	last := make(map[string]string)
	var failed []string
	for pending := slices.Clone(names); len(pending) > 0; {
		for i := 0; i < len(pending); i++ {
			name := pending[i]
			obj, err := s.Get(ctx, KeyPrefix+name)
			switch {
			case errors.Is(err, store.ErrNotFound):
				return fmt.Errorf("job %s: %w", name, err)
			case errors.Is(err, store.ErrUnavailable) && ctx.Err() == nil:
				continue // the daemon restarts: ask again
			case err != nil:
				return err
			}
			st := obj.Value.Status
			if line := string(st.Phase) + ": " + st.Message; st.Phase != "" && line != last[name] {
				last[name] = line
				fmt.Fprintf(out, "%s: %s\n", name, printable(line))
			}
			if st.Phase.Final() && st.RunGeneration == obj.Value.Generation {
				if st.Phase == Failed {
					failed = append(failed, name)
				}
				pending = slices.Delete(pending, i, i+1)
				i--
			}
		}
		if len(pending) == 0 {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("failed: %s", strings.Join(failed, ", "))
	}
	return nil
}

// cmdList: jobs list: one line per job.
func cmdList(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("list", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print each job as a JSON line instead")
	_, s, err := connect(fs, args, noArgs)
	if err != nil {
		return err
	}
	defer s.Close()
	objs, _, err := s.List(ctx, KeyPrefix)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(out)
		for _, o := range objs {
			if err := enc.Encode(jobLine{Name: strings.TrimPrefix(o.Key, KeyPrefix), Revision: o.Revision, Job: o.Value}); err != nil {
				return err
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tPHASE\tATTEMPTS\tEXIT\tCOMMAND\tMESSAGE")
	for _, o := range objs {
		j := o.Value
		exit := "-"
		if j.Status.ExitCode != nil {
			exit = fmt.Sprint(*j.Status.ExitCode)
		}
		phase := j.Status.Phase
		switch {
		case j.Deleting():
			phase = "Deleting" // marked: its attempt is being stopped
		case phase == "":
			phase = Pending
		}
		command := strings.Join(append([]string{j.Spec.Command}, j.Spec.Args...), " ")
		if r := []rune(command); len(r) > 40 {
			command = string(r[:39]) + "…"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d/%d\t%s\t%s\t%s\n", printable(strings.TrimPrefix(o.Key, KeyPrefix)), printable(string(phase)),
			j.Status.Attempts, 1+j.Spec.Retries, exit, printable(command), printable(j.Status.Message))
	}
	return tw.Flush()
}

// jobLine is a line of "jobs list -json".
type jobLine struct {
	Name     string `json:"name"`
	Revision int64  `json:"revision"`
	*Job
}

// cmdDelete: jobs delete [-wait D] NAME...: delete jobs. A job carries
// the daemon's finalizer, so its deletion marks it, and the daemon removes
// it once it has stopped its attempt (at once if none runs); the command
// waits up to -wait for that, and reports each job deleted, or only
// marked, waiting for its attempt to stop (the daemon is down, say).
func cmdDelete(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("delete", flag.ContinueOnError)
	wait := fs.Duration("wait", 5*time.Second, "how long to wait for the daemon to stop a deleted job's attempt and remove the job (0: do not wait)")
	names, s, err := connect(fs, args, someArgs)
	if err != nil {
		return err
	}
	defer s.Close()
	for _, name := range names {
		if err := deleteJob(ctx, s, name); err != nil {
			return err
		}
	}
	deadline := time.Now().Add(*wait)
	for _, name := range names {
		obj, gone, err := waitGone(ctx, s, KeyPrefix+name, deadline)
		switch {
		case err != nil:
			return fmt.Errorf("job %s: %w", name, err)
		case gone:
			fmt.Fprintf(out, "deleted %s\n", name)
		case obj.Value.Status.Phase == Starting || obj.Value.Status.Phase == Running:
			fmt.Fprintf(out, "%s marked for deletion: waiting for its attempt (pid %d) to stop; the daemon removes it then\n", name, obj.Value.Status.PID)
		default:
			fmt.Fprintf(out, "%s marked for deletion: waiting for the daemon to remove it\n", name)
		}
	}
	return nil
}

// deleteJob deletes job name at its current revision, trying again while
// its status changes; a job already marked is left as it is.
func deleteJob(ctx context.Context, s store.Store[*Job], name string) error {
	for {
		obj, err := s.Get(ctx, KeyPrefix+name)
		if err != nil {
			return fmt.Errorf("job %s: %w", name, err)
		}
		_, err = s.Delete(ctx, obj.Key, obj.Revision)
		if errors.Is(err, store.ErrConflict) {
			continue // its status changed meanwhile
		}
		if err != nil {
			return fmt.Errorf("job %s: %w", name, err)
		}
		return nil
	}
}

// waitGone polls key until it is gone or deadline passes; it returns the
// object still there, if any.
func waitGone(ctx context.Context, s store.Store[*Job], key string, deadline time.Time) (store.Object[*Job], bool, error) {
	for {
		obj, err := s.Get(ctx, key)
		switch {
		case errors.Is(err, store.ErrNotFound):
			return obj, true, nil
		case err != nil:
			return obj, false, err
		case !time.Now().Before(deadline):
			return obj, false, nil
		}
		select {
		case <-ctx.Done():
			return obj, false, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
