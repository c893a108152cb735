// Package syncbuf holds Buffer, a bytes.Buffer that goroutines may write
// and read at once: the log capture of tests whose code under test logs
// from goroutines of its own (a lease renewing, a controller's workers).
// It lives here, under internal, so that the tests of every module of the
// project share it instead of each writing its own.
package syncbuf

import (
	"bytes"
	"sync"
)

// Buffer is a goroutine-safe byte buffer. Its zero value is empty and
// ready to use; it must not be copied after first use.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p; it never fails. Concurrent writes do not interleave:
// each p is appended whole.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns a copy of everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
