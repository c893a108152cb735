package browsertest

import (
	"mime"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
)

// postRecorder answers every request 200 and records the POSTs it gets:
// the Origin they came from and their media type.
type postRecorder struct {
	mu    sync.Mutex
	posts map[string]map[string]int // origin -> media type -> count
	hosts map[string]bool           // Host headers of the POSTs
}

func (p *postRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
		p.mu.Lock()
		if p.posts[r.Header.Get("Origin")] == nil {
			p.posts[r.Header.Get("Origin")] = map[string]int{}
		}
		p.posts[r.Header.Get("Origin")][mt]++
		p.hosts[r.Host] = true
		p.mu.Unlock()
	}
	w.WriteHeader(http.StatusOK)
}

// TestHostilePagesReachAServerThatRefusesNothing proves the attacks real:
// against a server that takes every request, each hostile page's simple
// requests (text/plain, urlencoded, multipart) arrive, from another
// origin, from a file (Origin null) and from a rebound name; the rebound
// page's JSON arrives too, with its foreign Host. And no page of another
// origin gets a POST saying application/json through: the premise of
// refusing every other content type.
func TestHostilePagesReachAServerThatRefusesNothing(t *testing.T) {
	ctx := hostileBrowser(t)
	rec := &postRecorder{posts: map[string]map[string]int{}, hosts: map[string]bool{}}
	mux := http.NewServeMux()
	mux.Handle(hostilePagePath, hostilePageHandler())
	mux.Handle("/v1/create", rec)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	for _, line := range attackFromHostilePages(t, ctx, srv.URL+"/v1/create?key=jobs/x") {
		t.Log(line)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	t.Logf("POSTs received by origin and media type: %v; hosts %v", rec.posts, rec.hosts)
	if len(rec.posts) != 3 {
		t.Errorf("POSTs came from %d origins, want 3 (another port, file, rebound name): %v", len(rec.posts), rec.posts)
	}
	for origin, types := range rec.posts {
		for _, mt := range []string{"text/plain", "application/x-www-form-urlencoded", "multipart/form-data"} {
			if types[mt] == 0 {
				t.Errorf("no %s POST arrived from origin %q", mt, origin)
			}
		}
		rebound := origin == "http://"+rebindingHost+":"+portOf(srv.URL)
		if got := types["application/json"]; rebound && got == 0 {
			t.Errorf("the rebound page's same-origin JSON POST did not arrive")
		} else if !rebound && got > 0 {
			t.Errorf("%d POSTs saying application/json arrived from origin %q, another origin", got, origin)
		}
	}
	if !rec.hosts[rebindingHost+":"+portOf(srv.URL)] {
		t.Errorf("no POST arrived with Host %s (the rebinding page's): %v", rebindingHost, rec.hosts)
	}
}

// portOf returns the port of an http://host:port URL.
func portOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Port()
}
