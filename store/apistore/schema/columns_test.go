package schema_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore/schema"
)

const backup = `{"metadata":{"generation":2},"spec":{"database":"app","keep":3},
 "status":{"phase":"Succeeded","size":1024,"ok":true},"observedGeneration":2,
 "conditions":[{"type":"Synced","status":"True","reason":"Synced","lastTransitionTime":"2026-12-07T10:00:00Z"},
  {"type":"Ready","status":"False","reason":"Creating","lastTransitionTime":"2026-12-07T11:30:00Z"}]}`

// TestAColumnShowsWhatItsPathFindsAndNoneForNothing: members, condition
// elements by type, numbers and booleans as written, ages from a time;
// a missing member, a condition absent, a value that is not JSON or an
// age that is not a time are "<none>".
func TestAColumnShowsWhatItsPathFindsAndNoneForNothing(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		col  schema.Column
		want string
	}{
		{schema.Column{Name: "PHASE", Path: ".status.phase"}, "Succeeded"},
		{schema.Column{Name: "DB", Path: ".spec.database"}, "app"},
		{schema.Column{Name: "SIZE", Path: ".status.size"}, "1024"},
		{schema.Column{Name: "OK", Path: ".status.ok"}, "true"},
		{schema.Column{Name: "READY", Path: ".conditions[Ready].status"}, "False"},
		{schema.Column{Name: "REASON", Path: ".conditions[Ready].reason"}, "Creating"},
		{schema.Column{Name: "AGE", Path: ".conditions[Ready].lastTransitionTime", Type: "age"}, "30m"},
		{schema.Column{Name: "SYNCED", Path: ".conditions[Synced].lastTransitionTime", Type: "age"}, "2h"},
		{schema.Column{Name: "GONE", Path: ".status.gone"}, "<none>"},
		{schema.Column{Name: "NOCOND", Path: ".conditions[Deleting].status"}, "<none>"},
		{schema.Column{Name: "NOTTIME", Path: ".status.phase", Type: "age"}, "<none>"},
	} {
		require.Equal(t, c.want, c.col.Cell([]byte(backup), now), c.col.Name)
	}
	require.Equal(t, "<none>", schema.Column{Name: "X", Path: ".a"}.Cell([]byte("not json"), now))
	for d, want := range map[time.Duration]string{-time.Second: "0s", 90 * time.Second: "90s", 5 * time.Minute: "5m",
		3 * time.Hour: "3h", 50 * time.Hour: "2d"} {
		require.Equal(t, want, schema.Age(d))
	}
}

// TestAKindsColumnsAreReadCheckedAndChosenByTheLongestPrefix: columns
// parse with their kind; a column without a name, with a path it cannot
// read or of an unknown type is ErrInvalid naming it; ColumnsFor picks
// the longest prefix.
func TestAKindsColumnsAreReadCheckedAndChosenByTheLongestPrefix(t *testing.T) {
	r, err := schema.Parse([]byte(`{"kinds":[{"prefix":"backups/","columns":[{"name":"PHASE","path":".status.phase"}]},
		{"prefix":"backups/nightly/","columns":[{"name":"READY","path":".conditions[Ready].status"}]},{"prefix":"roles/"}]}`))
	require.NoError(t, err)
	require.Equal(t, "PHASE", r.ColumnsFor("backups/x")[0].Name)
	require.Equal(t, "READY", r.ColumnsFor("backups/nightly/1")[0].Name)
	require.Empty(t, r.ColumnsFor("roles/a"))
	require.Empty(t, r.ColumnsFor("other"))
	for _, bad := range []string{`{"path":".a"}`, `{"name":"A","path":"a"}`, `{"name":"A","path":".a..b"}`,
		`{"name":"A","path":".a[]"}`, `{"name":"A","path":".a[b"}`, `{"name":"A","path":".a","type":"date"}`} {
		_, err := schema.Parse([]byte(`{"kinds":[{"prefix":"x/","columns":[` + bad + `]}]}`))
		require.ErrorIs(t, err, store.ErrInvalid, bad)
		require.ErrorContains(t, err, "columns[0]", bad)
	}
}
