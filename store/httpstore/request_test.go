package httpstore_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func jsonBody(s string) io.Reader { return strings.NewReader(s) }

// do sends req and returns the status and, for a refusal, the error code
// of its JSON body; a refusal without a JSON error body with a code and a
// message fails the test.
func do(t *testing.T, req *http.Request) (status int, code string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	if resp.StatusCode < 400 {
		return resp.StatusCode, ""
	}
	require.Equal(t, "application/json", resp.Header.Get("Content-Type"), "a refusal's body is JSON: %s", data)
	var body struct {
		Error struct{ Code, Message string }
	}
	require.NoError(t, json.Unmarshal(data, &body), "a refusal's body: %s", data)
	require.NotEmpty(t, body.Error.Code, "a refusal names its code: %s", data)
	require.NotEmpty(t, body.Error.Message, "a refusal explains itself: %s", data)
	return resp.StatusCode, body.Error.Code
}

// raw sends a request with the read-write token, saying JSON if it is a
// POST, as the Client does.
func raw(t *testing.T, method, url, body string) (status int, code string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+rwToken)
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	return do(t, req)
}

func errorsAs(err error, target any) bool { return errors.As(err, target) }
