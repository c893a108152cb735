package snapshot_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/snapshot"
	"github.com/stretchr/testify/require"
)

// fill writes keys that JSON must escape, and values of any bytes (an
// empty one included) to s, with updates and a delete, and returns its
// List.
func fill(t *testing.T, s store.Store[[]byte]) ([]store.Object[[]byte], int64) {
	t.Helper()
	ctx := context.Background()
	keys := []string{"a", "a b", "line\nbreak", "quote\"back\\slash", "é/∂/日本", "<html>&amp;", strings.Repeat("k", store.MaxKeyLen)}
	for i, k := range keys {
		_, err := s.Create(ctx, k, []byte{byte(i), 0xff, 0x00, '\n', byte(255 - i)})
		require.NoError(t, err)
	}
	_, err := s.Create(ctx, "empty", []byte{})
	require.NoError(t, err)
	obj, err := s.Get(ctx, "a")
	require.NoError(t, err)
	_, err = s.Update(ctx, "a", []byte(`{"json":true}`), obj.Revision)
	require.NoError(t, err)
	obj, err = s.Get(ctx, "a b")
	require.NoError(t, err)
	_, err = s.Delete(ctx, "a b", obj.Revision)
	require.NoError(t, err)
	objs, rev, err := s.List(ctx, "")
	require.NoError(t, err)
	return objs, rev
}

// noIdentity hides the identity of the store it wraps.
type noIdentity struct{ store.Store[[]byte] }

// A snapshot holds every object of the List it was saved from, with its
// key, its value's bytes and its revisions, at the List's revision, and
// the store's identity (none for a store without one); Read and a Reader
// give them back as they were, and the Info Save returned.
func TestASnapshotReadsBackAsTheListItWasSavedFrom(t *testing.T) {
	ctx := t.Context()
	m := store.NewMemory[[]byte]()
	want, rev := fill(t, m)
	id, err := m.Identity(ctx)
	require.NoError(t, err)
	for name, tc := range map[string]struct {
		src      snapshot.Source
		identity string
	}{
		"with an identity":    {snapshot.Bytes(m), id},
		"without an identity": {snapshot.Bytes(noIdentity{m}), ""},
	} {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			info, err := snapshot.Save(ctx, &buf, tc.src)
			require.NoError(t, err)
			require.Equal(t, snapshot.Version, info.Version)
			require.Equal(t, tc.identity, info.Identity)
			require.Equal(t, rev, info.Revision)
			require.Equal(t, len(want), info.Count)
			require.True(t, strings.HasPrefix(info.Checksum, "sha256:"), info.Checksum)
			require.Equal(t, strings.Count(buf.String(), "\n"), len(want)+2, "a header, one line per object, a trailer")

			got, objs, err := snapshot.Read(bytes.NewReader(buf.Bytes()))
			require.NoError(t, err)
			require.Equal(t, info, got)
			require.Equal(t, want, objs)

			rd, err := snapshot.NewReader(bytes.NewReader(buf.Bytes()))
			require.NoError(t, err)
			require.Empty(t, rd.Info().Checksum, "the checksum is not known before the end")
			var streamed []store.Object[[]byte]
			for {
				obj, err := rd.Next()
				if err == io.EOF {
					break
				}
				require.NoError(t, err)
				streamed = append(streamed, obj)
			}
			require.Equal(t, want, streamed)
			require.Equal(t, info, rd.Info())
		})
	}
}

type spec struct {
	Replicas int      `json:"replicas"`
	Tags     []string `json:"tags,omitempty"`
}

// upper is a codec that is not JSON: the value's tags, upper-cased.
type upper struct{}

func (upper) Marshal(v *spec) ([]byte, error) {
	return []byte(strings.ToUpper(strings.Join(v.Tags, ","))), nil
}

func (upper) Unmarshal(b []byte) (*spec, error) {
	return &spec{Tags: strings.Split(string(b), ",")}, nil
}

// A typed store is saved as the bytes its codec makes of each value: the
// store's own codec, or JSON, when none is given.
func TestATypedStoreIsSavedAsItsCodecsBytes(t *testing.T) {
	ctx := t.Context()
	m := store.NewMemory[*spec]()
	_, err := m.Create(ctx, "app/web", &spec{Replicas: 3, Tags: []string{"a", "b"}})
	require.NoError(t, err)
	for name, tc := range map[string]struct {
		src  snapshot.Source
		want string
	}{
		"JSON by default": {snapshot.Typed[*spec](m, nil), `{"replicas":3,"tags":["a","b"]}`},
		"a given codec":   {snapshot.Typed[*spec](m, upper{}), "A,B"},
		"a view's codec":  {snapshot.Typed[*spec](store.NewView[*spec](store.NewMemory[[]byte](), upper{}), nil), ""},
	} {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			_, err := snapshot.Save(ctx, &buf, tc.src)
			require.NoError(t, err)
			_, objs, err := snapshot.Read(&buf)
			require.NoError(t, err)
			if tc.want == "" {
				require.Empty(t, objs, "the view's store is empty")
				return
			}
			require.Len(t, objs, 1)
			require.Equal(t, tc.want, string(objs[0].Value))
		})
	}
}

// A store that cannot be listed writes nothing; nil arguments are
// store.ErrInvalid.
func TestSaveOfAStoreThatCannotBeListedWritesNothing(t *testing.T) {
	ctx := t.Context()
	m := store.NewMemory[[]byte]()
	require.NoError(t, m.Close())
	var buf bytes.Buffer
	_, err := snapshot.Save(ctx, &buf, snapshot.Bytes(m))
	require.ErrorIs(t, err, store.ErrUnavailable)
	require.Zero(t, buf.Len())

	_, err = snapshot.Save(ctx, nil, snapshot.Bytes(m))
	require.ErrorIs(t, err, store.ErrInvalid)
	_, err = snapshot.Save(ctx, &buf, nil)
	require.ErrorIs(t, err, store.ErrInvalid)
	_, err = snapshot.Save(ctx, &buf, snapshot.Bytes(nil))
	require.ErrorIs(t, err, store.ErrInvalid)
	//lint:ignore SA1012 a nil context is the bad input under test
	_, err = snapshot.Save(nil, &buf, snapshot.Bytes(m))
	require.ErrorIs(t, err, store.ErrInvalid)
	require.Zero(t, buf.Len())
}

// saved returns the bytes of a snapshot of a small store.
func saved(t *testing.T) []byte {
	t.Helper()
	m := store.NewMemory[[]byte]()
	for _, k := range []string{"a", "b", "c"} {
		_, err := m.Create(t.Context(), k, []byte(`{"k":"`+k+`"}`))
		require.NoError(t, err)
	}
	var buf bytes.Buffer
	_, err := snapshot.Save(t.Context(), &buf, snapshot.Bytes(m))
	require.NoError(t, err)
	return buf.Bytes()
}

// readAll reads data through a Reader to its end and returns the error
// that ended it (nil for io.EOF) and how many objects it gave.
func readAll(data []byte) (int, error) {
	rd, err := snapshot.NewReader(bytes.NewReader(data))
	if err != nil {
		return 0, err
	}
	n := 0
	for {
		_, err := rd.Next()
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		n++
	}
}

// Every truncation of a snapshot, every bit of it flipped and anything
// after its trailer is an error matching ErrDamaged (ErrFormat where the
// flip changed the version): Read returns no object, a Reader's end is the
// error, never io.EOF, and nothing panics.
func TestEveryTruncationAndEveryDamagedBitIsAnError(t *testing.T) {
	data := saved(t)
	_, _, err := snapshot.Read(bytes.NewReader(data))
	require.NoError(t, err)
	check := func(name string, d []byte) {
		t.Helper()
		info, objs, err := snapshot.Read(bytes.NewReader(d))
		if !errors.Is(err, snapshot.ErrDamaged) && !errors.Is(err, snapshot.ErrFormat) {
			t.Fatalf("%s: Read: %v, want ErrDamaged", name, err)
		}
		if objs != nil || info != (snapshot.Info{}) {
			t.Fatalf("%s: Read returned %d objects and %+v with its error", name, len(objs), info)
		}
		if _, err := readAll(d); err == nil {
			t.Fatalf("%s: a Reader read it to its end", name)
		}
	}
	for n := range len(data) {
		check("truncated", data[:n])
	}
	for i := range data {
		for bit := range 8 {
			d := bytes.Clone(data)
			d[i] ^= 1 << bit
			check("flipped", d)
		}
	}
	check("a byte after the trailer", append(bytes.Clone(data), '\n'))
	check("a second trailer", append(bytes.Clone(data), data[bytes.LastIndexByte(data[:len(data)-1], '\n')+1:]...))
	check("not a snapshot", []byte("{\"key\":\"a\"}\n"))
	check("a long first line", bytes.Repeat([]byte("x"), 1<<20))
	// A damaged object line is read up to the bound, never further.
	header := data[:bytes.IndexByte(data, '\n')+1]
	endless := io.MultiReader(bytes.NewReader(header), endlessX{})
	if _, _, err := snapshot.Read(endless); !errors.Is(err, snapshot.ErrDamaged) {
		t.Fatalf("an endless object line: %v, want ErrDamaged", err)
	}
}

// endlessX reads as an endless run of 'x'.
type endlessX struct{}

func (endlessX) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}

// A header naming another version of the format is ErrFormat.
func TestAnUnknownVersionIsErrFormat(t *testing.T) {
	data := saved(t)
	d := bytes.Replace(data, []byte(`"version":1`), []byte(`"version":2,"new":true`), 1)
	_, _, err := snapshot.Read(bytes.NewReader(d))
	require.ErrorIs(t, err, snapshot.ErrFormat)
}
