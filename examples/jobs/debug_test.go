package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/converge-go/converge/internal/syncbuf"
)

// TestDaemonServesTheDebugPageAndPrometheusMetrics: beside its store, the
// daemon's one HTTP server answers converge's debug page (JSON with the jobs
// controller, synced) and Prometheus metrics under controller-runtime's
// names for the jobs controller.
func TestDaemonServesTheDebugPageAndPrometheusMetrics(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	var logs syncbuf.Buffer
	dir := t.TempDir()
	d, err := startDaemon(ctx, exe, []string{testMainEnv + "=1", "JOBS_TOKEN="}, dir, &logs, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Kill()
	base := strings.TrimSuffix(d.url, StorePath)
	token := daemonTokenOf(t, dir)

	get := func(path string) string {
		t.Helper()
		code, body := httpGet(t, base+path, "", token)
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d\n%s", path, code, body)
		}
		return body
	}

	var page struct {
		Controllers []struct {
			Name   string `json:"name"`
			Synced bool   `json:"synced"`
		} `json:"controllers"`
	}
	body := get(DebugPath + "?format=json")
	if err := json.Unmarshal([]byte(body), &page); err != nil {
		t.Fatalf("debug page JSON: %v\n%s", err, body)
	}
	if len(page.Controllers) != 1 || page.Controllers[0].Name != "jobs" || !page.Controllers[0].Synced {
		t.Errorf("debug page does not show the synced jobs controller:\n%s", body)
	}
	if html := get(DebugPath); !strings.Contains(html, "jobs") {
		t.Errorf("debug page HTML does not name the controller:\n%s", html)
	}

	metrics := get(MetricsPath)
	for _, want := range []string{
		`controller_runtime_max_concurrent_reconciles{controller="jobs"}`,
		`controller_runtime_reconcile_total{controller="jobs",result="success"}`,
		`workqueue_adds_total{controller="jobs",name="jobs"}`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if t.Failed() {
		t.Logf("metrics:\n%s", metrics)
	}
}

func TestDaemonServesNothingButTheProbesBareStatusWithoutItsToken(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var logs syncbuf.Buffer
	dir := t.TempDir()
	d, err := startDaemon(t.Context(), exe, []string{testMainEnv + "=1", "JOBS_TOKEN="}, dir, &logs, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Kill()
	base := strings.TrimSuffix(d.url, StorePath)
	token := daemonTokenOf(t, dir)
	for _, path := range []string{DebugPath, DebugPath + "?format=json", MetricsPath, StorePath + "/v1/list?prefix=jobs%2F"} {
		if code, body := httpGet(t, base+path, "", ""); code != http.StatusUnauthorized {
			t.Errorf("GET %s without the token: %d; want 401\n%s", path, code, body)
		}
		if code, body := httpGet(t, base+path, "", "not-"+token); code != http.StatusUnauthorized {
			t.Errorf("GET %s with another token: %d; want 401\n%s", path, code, body)
		}
		if code, _ := httpGet(t, base+path, "", token); code != http.StatusOK {
			t.Errorf("GET %s with the token: %d; want 200", path, code)
		}
	}
	if code, body := httpGet(t, base+"/readyz", "", ""); code != http.StatusOK || strings.TrimSpace(body) != "ok" {
		t.Errorf("GET /readyz without the token: %d %q; want 200 and the bare status", code, body)
	}
}

func TestDaemonAnswersOnlyHostsItWasToldOf(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var logs syncbuf.Buffer
	dir := t.TempDir()
	d, err := startDaemon(t.Context(), exe, []string{testMainEnv + "=1", "JOBS_TOKEN="}, dir, &logs, time.Minute, "-allow-host", "jobs.example")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Kill()
	base := strings.TrimSuffix(d.url, StorePath)
	token := daemonTokenOf(t, dir)
	for _, path := range []string{DebugPath, MetricsPath, StorePath + "/v1/list?prefix=jobs%2F"} {
		if code, body := httpGet(t, base+path, "rebound.example", token); code != http.StatusForbidden {
			t.Errorf("GET %s with Host rebound.example: %d; want 403\n%s", path, code, body)
		}
		if code, body := httpGet(t, base+path, "jobs.example", token); code != http.StatusOK {
			t.Errorf("GET %s with Host jobs.example (-allow-host): %d; want 200\n%s", path, code, body)
		}
	}
}

// daemonTokenOf returns the token the daemon generated in dir.
func daemonTokenOf(t *testing.T, dir string) string {
	t.Helper()
	tok, ok, err := readTokenFile(filepath.Join(dir, TokenFile))
	if err != nil || !ok {
		t.Fatalf("the daemon's token file: %v (found: %v)", err, ok)
	}
	return tok
}

// httpGet GETs url, with the Host header host and the bearer token if set,
// and returns the status code and body.
func httpGet(t *testing.T, url, host, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}
