package httpstore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/httpstore"
)

// FuzzHandlerRequest sends the handler arbitrary requests (method, path,
// query, body, credentials, with or without Content-Type: application/json)
// and checks that it never panics, never answers a refusal without a JSON
// error, never fails with a 5xx on bad input, that a POST not saying JSON
// is refused, and that a refused request writes nothing while an accepted
// write writes exactly the key its query names. Its seed corpus runs as a
// normal test.
func FuzzHandlerRequest(f *testing.F) {
	for _, s := range handlerRequestSeeds {
		f.Add(s.method, s.target, []byte(s.body), s.auth)
	}
	f.Fuzz(func(t *testing.T, method, target string, body []byte, auth uint8) {
		m := store.NewMemory[*item]()
		defer m.Close()
		ctx := context.Background()
		seed, err := m.Create(ctx, "seed", &item{N: 1})
		if err != nil {
			t.Fatal(err)
		}
		h, err := httpstore.NewHandler[*item](m, httpstore.WithReadWriteToken(rwToken), httpstore.WithReadOnlyToken(roToken), httpstore.WithMaxBodyBytes(1<<10))
		if err != nil {
			t.Fatal(err)
		}
		r, path, query := fuzzRequest(method, target, body, auth)
		watch := path == "/v1/watch"
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)

		objs, rev, err := m.List(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		if method == http.MethodPost && target == "/v1/create?key=a" && string(body) == `{"n":1}` && auth == 2 && rec.Code != http.StatusCreated {
			t.Fatalf("a plain create with the read-write token was refused: %d %s", rec.Code, rec.Body)
		}
		if method == http.MethodPost && auth&notJSON != 0 && rec.Code < 400 {
			t.Fatalf("a POST without Content-Type: application/json was served: %d", rec.Code)
		}
		if rec.Code >= 400 {
			var eb struct {
				Error struct{ Code, Message string }
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &eb); err != nil || eb.Error.Code == "" || eb.Error.Message == "" {
				t.Fatalf("status %d without a JSON error: %q", rec.Code, rec.Body.String())
			}
			if rec.Code >= 500 && !watch {
				t.Fatalf("status %d for a request: %q", rec.Code, rec.Body.String())
			}
			if rev != seed.Revision || len(objs) != 1 || objs[0] != seed {
				t.Fatalf("a refused request (%d %s) wrote: revision %d, %d objects", rec.Code, eb.Error.Code, rev, len(objs))
			}
			return
		}
		switch path {
		case "/v1/create", "/v1/update", "/v1/delete":
			if rev != seed.Revision+1 {
				t.Fatalf("an accepted write made %d revisions", rev-seed.Revision)
			}
			q, err := url.ParseQuery(query)
			if err != nil {
				t.Fatalf("accepted a malformed query %q", query)
			}
			key := q.Get("key")
			if _, err := m.Get(ctx, key); (path == "/v1/delete") != (err != nil) {
				t.Fatalf("the write to %q (query %q) did not go to that key: %v", key, query, err)
			}
		default:
			if rev != seed.Revision {
				t.Fatalf("a read (%s) wrote", path)
			}
		}
	})
}

// notJSON is the bit of FuzzHandlerRequest's auth that sends a request
// without Content-Type: application/json.
const notJSON = 4

// fuzzRequest builds FuzzHandlerRequest's request to a loopback Host; a
// watch's request comes with its context done, as a stream lasts as long
// as its request.
func fuzzRequest(method, target string, body []byte, auth uint8) (r *http.Request, path, query string) {
	path, query, _ = strings.Cut(target, "?")
	r = httptest.NewRequest(http.MethodGet, "http://127.0.0.1:7007/", bytes.NewReader(body))
	r.Method, r.URL.Path, r.URL.RawQuery = method, path, query
	if auth&notJSON == 0 {
		r.Header.Set("Content-Type", "application/json")
	}
	switch auth % 4 {
	case 1:
		r.Header.Set("Authorization", "Bearer "+roToken)
	case 2:
		r.Header.Set("Authorization", "Bearer "+rwToken)
	case 3:
		r.Header.Set("Authorization", "Bearer wrong")
	}
	if path == "/v1/watch" {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		r = r.WithContext(ctx)
	}
	return r, path, query
}

// handlerRequestSeeds are FuzzHandlerRequest's seeds. auth's low two bits
// choose the credentials (none, read-only, read-write, wrong); notJSON
// leaves out the Content-Type.
var handlerRequestSeeds = []struct {
	method, target, body string
	auth                 uint8
}{
	{"POST", "/v1/create?key=a", `{"n":1}`, 2},
	{"POST", "/v1/create?key=a&guard=mod:1:seed", `{"n":1}`, 2},
	{"POST", "/v1/update?key=seed&revision=1", `{"n":2,"s":"x"}`, 2},
	{"POST", "/v1/delete?key=seed&revision=1", ``, 2},
	{"GET", "/v1/get?key=seed", ``, 1},
	{"GET", "/v1/list?prefix=", ``, 1},
	{"GET", "/v1/revision", ``, 1},
	{"GET", "/v1/watch?after=0", ``, 1},
	{"POST", "/v1/progress?watch=x&seq=1", ``, 1},
	{"POST", "/v1/create?key=a", `{"n":1}`, 1},
	{"POST", "/v1/create?key=a", `{"n":1}`, 3},
	{"POST", "/v1/create?key=a", `{"n":1}`, 0},
	{"POST", "/v1/create?key=..%2Fx", `{"n":1}`, 2},
	{"POST", "/v1/create?key=a%00b", `{"n":1}`, 2},
	{"POST", "/v1/create?key=%FF", `{"n":1}`, 2},
	{"POST", "/v1/create?key=a%zz", `{"n":1}`, 2},
	{"POST", "/v1/create?key=a&key=b", `{"n":1}`, 2},
	{"POST", "/v1/create?key=a", `{"n":`, 2},
	{"POST", "/v1/create?key=a", "{\"s\":\"\xff\"}", 2},
	{"POST", "/v1/create?key=a", `{"s":"\ud800"}`, 2},
	{"POST", "/v1/create?key=a", `null`, 2},
	{"POST", "/v1/create?key=a&guard=mod:-1:seed", `{"n":1}`, 2},
	{"POST", "/v1/update?key=seed&revision=99999999999999999999", `{"n":1}`, 2},
	{"DELETE", "/v1/delete?key=seed&revision=1", ``, 2},
	{"POST", "/v1/../v1/create?key=a", `{"n":1}`, 2},
	{"POST", "/v1/create?key=a", `{"n":1}`, 2 | notJSON},
	{"POST", "/v1/delete?key=seed&revision=1", ``, 2 | notJSON},
	{"POST", "/v1/delete?key=seed&revision=1&propagation=background", ``, 2},
	{"POST", "/v1/delete?key=seed&revision=1&propagation=foreground", ``, 2},
	{"POST", "/v1/delete?key=seed&revision=1&propagation=sideways", ``, 2},
	{"POST", "/v1/delete?key=seed&revision=1&propagation=orphan&propagation=orphan", ``, 2},
	{"POST", "/v1/status?key=seed&revision=1", `{"n":2}`, 2},
	{"GET", "/v1/identity", ``, 1},
	{"GET", "/v1/identity?key=seed", ``, 1},
}
