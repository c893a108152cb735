package intent_test

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile/kit/intent"
)

// idArgs are the arguments of an ID.
type idArgs struct {
	key         string
	create, gen int64
	attempt     int
}

// TestIDsAreUniqueSafeAndShort draws keys made of characters an ID keeps
// and those it spells, of every length around the point where a key is
// shortened, with near revisions, generations and attempts, and checks
// that no two argument lists share an ID, and that every ID holds only
// A-Z a-z 0-9 . _ - ~ and is at most 128 bytes.
func TestIDsAreUniqueSafeAndShort(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	alphabet := []string{"a", "B", "7", ".", "-", "_", "/", "~", " ", "é", "\x00", ".c1", ".g2", ".a3", "_2F"}
	seen := map[string]idArgs{}
	for range 50000 {
		var b strings.Builder
		for range rng.IntN(40) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		args := idArgs{key: b.String(), create: rng.Int64N(4), gen: rng.Int64N(4), attempt: rng.IntN(4)}
		id := intent.ID(args.key, args.create, args.gen, args.attempt)
		if prev, ok := seen[id]; ok && prev != args {
			t.Fatalf("%+v and %+v share the ID %q", prev, args, id)
		}
		seen[id] = args
		require.LessOrEqual(t, len(id), 128, id)
		require.Empty(t, strings.Trim(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-~"), id)
	}
	// Spellings that a naive escape would mix up.
	pairs := [][2]string{{"a/b", "a_2Fb"}, {"a/b", "a_b"}, {"a.c1", "a"}, {strings.Repeat("x", 70) + "1", strings.Repeat("x", 70) + "2"}}
	for _, p := range pairs {
		require.NotEqual(t, intent.ID(p[0], 1, 1, 1), intent.ID(p[1], 1, 1, 1), "%q and %q", p[0], p[1])
	}
	long := intent.ID(strings.Repeat("/", 200), 1<<62, 1<<62, 1<<30)
	require.LessOrEqual(t, len(long), 128, long)
	require.Equal(t, "jobs_2Fbackup.c7.g2.a1", intent.ID("jobs/backup", 7, 2, 1))
}
