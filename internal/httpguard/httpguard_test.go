package httpguard

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestHostsAreLoopbackNamesLiteralsOrListed(t *testing.T) {
	g, err := New(Policy{Hosts: []string{"store.example"}})
	if err != nil {
		t.Fatal(err)
	}
	for host, ok := range map[string]bool{
		"127.0.0.1:7007": true, "[::1]:7007": true, "10.1.2.3": true, "localhost:80": true,
		"LOCALHOST.:80": true, "a.localhost": true, "store.example:7007": true, "STORE.example": true,
		"": true, "evil.example:7007": false, "localhost.evil.example": false, "127.0.0.1.nip.io:7007": false,
	} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Host = host
		err := g.Check(r)
		if got := err == nil; got != ok {
			t.Errorf("Host %q: allowed %v, want %v (%v)", host, got, ok, err)
		}
		if err != nil && !errors.Is(err, ErrHost) {
			t.Errorf("Host %q: %v does not match ErrHost", host, err)
		}
	}
	any, _ := New(Policy{Hosts: []string{"*"}})
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.Host = "evil.example"
	if err := any.Check(r); err != nil {
		t.Errorf("Hosts [*]: %v", err)
	}
}

func TestStateChangesFromAnotherOriginAreRefused(t *testing.T) {
	g, err := New(Policy{Origins: []string{"https://console.example"}})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, method string
		headers      map[string]string
		ok           bool
	}{
		{"no browser headers (curl, Go)", http.MethodPost, nil, true},
		{"same origin", http.MethodPost, map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": "http://127.0.0.1:7007"}, true},
		{"same origin, old browser", http.MethodPost, map[string]string{"Origin": "http://127.0.0.1:7007"}, true},
		{"cross site", http.MethodPost, map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "http://evil.example"}, false},
		{"another port on loopback", http.MethodPost, map[string]string{"Sec-Fetch-Site": "same-site", "Origin": "http://127.0.0.1:8000"}, false},
		{"file:// page", http.MethodPost, map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "null"}, false},
		{"foreign Origin, no Sec-Fetch-Site", http.MethodPost, map[string]string{"Origin": "http://evil.example"}, false},
		{"trusted origin", http.MethodPost, map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://console.example"}, true},
		{"cross-site read", http.MethodGet, map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "http://evil.example"}, true},
	}
	for _, c := range cases {
		r := httptest.NewRequest(c.method, "http://127.0.0.1:7007/v1/create?key=a", nil)
		for k, v := range c.headers {
			r.Header.Set(k, v)
		}
		err := g.Check(r)
		if got := err == nil; got != c.ok {
			t.Errorf("%s: allowed %v, want %v (%v)", c.name, got, c.ok, err)
		}
		if err != nil && !errors.Is(err, ErrCrossOrigin) {
			t.Errorf("%s: %v does not match ErrCrossOrigin", c.name, err)
		}
	}
}

func TestStateChangesMustSayJSON(t *testing.T) {
	for ct, ok := range map[string]bool{
		"application/json": true, "application/json; charset=utf-8": true, "Application/JSON": true,
		"": false, "text/plain": false, "application/x-www-form-urlencoded": false, "multipart/form-data; boundary=x": false,
		"application/json-seq": false,
	} {
		r := httptest.NewRequest(http.MethodPost, "/", nil)
		if ct != "" {
			r.Header.Set("Content-Type", ct)
		}
		err := RequireJSON(r)
		if got := err == nil; got != ok {
			t.Errorf("Content-Type %q: allowed %v, want %v", ct, got, ok)
		}
		if err != nil && !errors.Is(err, ErrContentType) {
			t.Errorf("%q: %v does not match ErrContentType", ct, err)
		}
	}
	if err := RequireJSON(httptest.NewRequest(http.MethodGet, "/", nil)); err != nil {
		t.Errorf("GET: %v", err)
	}
}

func TestMalformedPolicyIsRefused(t *testing.T) {
	for _, p := range []Policy{{Hosts: []string{"http://x"}}, {Hosts: []string{"x:80"}}, {Hosts: []string{""}}, {Origins: []string{"not a url"}}} {
		if _, err := New(p); err == nil {
			t.Errorf("New(%+v) accepted", p)
		}
	}
}

func TestHandlerNeverCallsTheHandlerForARefusedRequest(t *testing.T) {
	g, _ := New(Policy{})
	called := false
	h := g.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { called = true }),
		func(w http.ResponseWriter, _ *http.Request, err error) {
			http.Error(w, err.Error(), http.StatusForbidden)
		})
	r := httptest.NewRequest(http.MethodPost, "/", nil)
	r.Host = "evil.example"
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if called || w.Code != http.StatusForbidden {
		t.Fatalf("refused request: handler called %v, status %d", called, w.Code)
	}
}
