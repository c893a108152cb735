package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
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
	d, err := startDaemon(ctx, exe, []string{testMainEnv + "=1"}, t.TempDir(), &logs, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer d.kill()
	base := strings.TrimSuffix(d.url, StorePath)

	get := func(path string) string {
		t.Helper()
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %v\n%s", path, resp.StatusCode, err, body)
		}
		return string(body)
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
