package cluster

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"time"
)

// LogLine is one line of the server's log, as its log_line_prefix
// ('%m [%p] %x %a ') writes it.
type LogLine struct {
	Time time.Time
	PID  int
	// XID is the transaction's ID when the line was written (0 before the
	// transaction wrote anything: the line of its first writing statement
	// carries 0, the next line of the same transaction its ID).
	XID uint64
	// App is the session's application_name ("" before it is known).
	App string
	// Message is what follows, from its level: "LOG:  statement: CREATE ROLE ...".
	Message string
}

// logTime is the layout of %m.
const logTime = "2006-01-02 15:04:05.000 MST"

// ReadLog returns the lines of the server's log that carry its prefix,
// in order; continuation lines are left out.
func (c *Cluster) ReadLog() ([]LogLine, error) {
	f, err := os.Open(c.LogFile())
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []LogLine
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if l, ok := parseLogLine(sc.Text()); ok {
			out = append(out, l)
		}
	}
	return out, sc.Err()
}

// parseLogLine reads "2026-12-02 01:09:26.699 UTC [1296] 745 psql LOG:  ...".
func parseLogLine(s string) (LogLine, bool) {
	if len(s) < len(logTime) {
		return LogLine{}, false
	}
	t, err := time.Parse(logTime, s[:len(logTime)])
	if err != nil {
		return LogLine{}, false
	}
	rest, ok := strings.CutPrefix(s[len(logTime):], " [")
	if !ok {
		return LogLine{}, false
	}
	pidText, rest, ok := strings.Cut(rest, "] ")
	pid, err := strconv.Atoi(pidText)
	if !ok || err != nil {
		return LogLine{}, false
	}
	xidText, rest, ok := strings.Cut(rest, " ")
	xid, err := strconv.ParseUint(xidText, 10, 64)
	if !ok || err != nil {
		return LogLine{}, false
	}
	// The application name runs up to the level; it holds no space in
	// what this example names its sessions.
	for _, level := range []string{"LOG:", "ERROR:", "FATAL:", "WARNING:", "STATEMENT:", "DETAIL:", "HINT:", "PANIC:"} {
		if i := strings.Index(rest, level); i >= 0 {
			return LogLine{Time: t, PID: pid, XID: xid, App: strings.TrimSpace(rest[:i]), Message: rest[i:]}, true
		}
	}
	return LogLine{}, false
}

// Statement returns the SQL of a line that logs a statement
// (log_statement), and false for any other line.
func (l LogLine) Statement() (string, bool) {
	for _, marker := range []string{"LOG:  statement: ", "LOG:  execute "} {
		if _, sql, ok := strings.Cut(l.Message, marker); ok {
			if marker == "LOG:  execute " {
				// "execute <unnamed>: SQL"
				_, sql, ok = strings.Cut(sql, ": ")
				if !ok {
					return "", false
				}
			}
			return sql, true
		}
	}
	return "", false
}
