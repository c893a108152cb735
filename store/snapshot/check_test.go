package snapshot_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/snapshot"
	"github.com/converge-go/converge/store/snapshot/snapshottest"
	"github.com/stretchr/testify/require"
)

// A value a ValueCheck refuses fails the read at its object with an error
// matching ErrUnservable and store.ErrInvalid that names its key and the
// check's reason: Read returns no object, and a Reader's Next keeps
// returning the error; nil checks are skipped, and without a check the
// same snapshot reads whole.
func TestAValueACheckRefusesFailsTheReadNamingTheKey(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, snapshottest.Write(&buf, snapshottest.Header{Identity: "bolt:A", Revision: 3},
		snapshottest.Object("app/a", `{"spec":1}`, 1),
		snapshottest.Object("app/b", `not json`, 2),
		snapshottest.Object("app/c", `{}`, 3)))
	data := bytes.Clone(buf.Bytes())
	why := errors.New("not of the kind")
	checks := map[string]snapshot.ValueCheck{
		"the JSON codec": snapshot.Decodes[json.RawMessage](store.JSON[json.RawMessage]{}, nil),
		"a layer's check": snapshot.Decodes[json.RawMessage](store.JSON[json.RawMessage]{}, func(v json.RawMessage) error {
			if string(v) == `{}` {
				return why
			}
			return nil
		}),
	}
	for name, check := range checks {
		info, objs, err := snapshot.Read(bytes.NewReader(data), nil, check)
		require.ErrorIs(t, err, snapshot.ErrUnservable, name)
		require.ErrorIs(t, err, store.ErrInvalid, name)
		require.Empty(t, objs, name)
		require.Zero(t, info, name)
		rd, err := snapshot.NewReader(bytes.NewReader(data), check)
		require.NoError(t, err, name)
		var read []string
		for {
			o, err := rd.Next()
			if err != nil {
				require.ErrorIs(t, err, snapshot.ErrUnservable, name)
				_, again := rd.Next()
				require.Equal(t, err, again, name)
				break
			}
			read = append(read, o.Key)
		}
		require.Equal(t, []string{"app/a"}, read, name)
	}
	_, _, err := snapshot.Read(bytes.NewReader(data), checks["the JSON codec"])
	require.ErrorContains(t, err, `"app/b"`)
	buf.Reset()
	require.NoError(t, snapshottest.Write(&buf, snapshottest.Header{Identity: "bolt:A", Revision: 3},
		snapshottest.Object("app/a", `{"spec":1}`, 1),
		snapshottest.Object("app/c", `{}`, 3)))
	_, _, err = snapshot.Read(bytes.NewReader(buf.Bytes()), checks["a layer's check"])
	require.ErrorContains(t, err, `"app/c"`)
	require.ErrorIs(t, err, why)

	_, objs, err := snapshot.Read(bytes.NewReader(data))
	require.NoError(t, err)
	require.Len(t, objs, 3)
}
