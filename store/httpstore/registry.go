package httpstore

import (
	"crypto/rand"
	"encoding/hex"
	"sync"

	"github.com/converge-go/converge/store"
)

// registry holds the watch streams a handler is serving, by id, so that a
// progress request (a separate HTTP request) can reach its stream.
type registry struct {
	mu      sync.Mutex
	streams map[string]*stream
}

// stream is the server's side of one watch stream.
type stream struct {
	id        string
	requester store.ProgressRequester // nil if the store's watch has none

	mu sync.Mutex
	// seq and rev describe the progress requests not yet answered: the
	// highest request number and the highest store revision read when one
	// was made (0 when none is pending).
	seq, rev int64
}

func (g *registry) add(requester store.ProgressRequester) *stream {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	st := &stream{id: hex.EncodeToString(b[:]), requester: requester}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.streams == nil {
		g.streams = map[string]*stream{}
	}
	g.streams[st.id] = st
	return st
}

func (g *registry) remove(st *stream) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.streams, st.id)
}

func (g *registry) find(id string) *stream {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.streams[id]
}

// pending records a progress request numbered seq, made when the store's
// revision was rev.
func (st *stream) pending(seq, rev int64) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.seq = max(st.seq, seq)
	st.rev = max(st.rev, rev)
}

// answered returns the request number that a progress report at revision
// rev answers (0 for none) and forgets the requests it answers.
func (st *stream) answered(rev int64) int64 {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.seq == 0 || rev < st.rev {
		return 0
	}
	seq := st.seq
	st.seq, st.rev = 0, 0
	return seq
}
