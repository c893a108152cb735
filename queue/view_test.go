package queue

import (
	"cmp"
	"go/ast"
	"go/parser"
	"go/token"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// TestTheQueueKeepsACoreOfMethodsAndEveryOtherNameIsDeprecated: the
// Queue's methods are the core the package doc lists, and every other
// exported method is a deprecated name of an earlier release, declared in
// deprecated.go with a "Deprecated:" paragraph. Inspection goes on View.
func TestTheQueueKeepsACoreOfMethodsAndEveryOtherNameIsDeprecated(t *testing.T) {
	core := []string{"Add", "AddBatch", "AddWith", "Done", "Drain", "Forget", "Get", "GetBatch", "Grow", "Remove", "ShutDown", "View"}
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	var got []string
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ParseComments)
		require.NoError(t, err)
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || !fn.Name.IsExported() || receiverName(fn) != "Queue" {
				continue
			}
			if file == "deprecated.go" {
				require.Contains(t, fn.Doc.Text(), "\nDeprecated: use ", "Queue.%s is in deprecated.go without a Deprecated paragraph", fn.Name.Name)
				continue
			}
			got = append(got, fn.Name.Name)
		}
	}
	slices.Sort(got)
	require.Equal(t, core, got, "the Queue's methods outside deprecated.go")
}

// receiverName is the type name of a method's receiver: Queue for
// (q *Queue[K]).
func receiverName(fn *ast.FuncDecl) string {
	x := fn.Recv.List[0].Type
	if s, ok := x.(*ast.StarExpr); ok {
		x = s.X
	}
	if ix, ok := x.(*ast.IndexExpr); ok {
		x = ix.X
	}
	if id, ok := x.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// TestEveryDeprecatedNameDoesWhatItsReplacementDoes: two queues driven by
// the same random sequence, one through the deprecated names and one
// through their replacements (AddWith, GetBatch, View), answer alike at
// every step and hold the same keys in the same states throughout.
func TestEveryDeprecatedNameDoesWhatItsReplacementDoes(t *testing.T) {
	for seed := range uint64(20) {
		synctest.Test(t, func(t *testing.T) {
			ctx := t.Context()
			mk := func() *Queue[int] {
				return New(Options[int]{RateLimiter: NewExponential[int](time.Millisecond, time.Second, 0), AgingAfter: 3})
			}
			old, now := mk(), mk()
			r := rand.New(rand.NewPCG(seed, 1))
			var buf []Handout[int]
			for range 300 {
				k := r.IntN(8)
				switch r.IntN(7) {
				case 0:
					d := time.Duration(r.IntN(3)) * time.Millisecond
					old.AddAfter(k, d)
					now.AddWith(k, AddOptions{After: d})
				case 1:
					old.AddRateLimited(k)
					now.AddWith(k, AddOptions{RateLimited: true})
				case 2:
					o := AddOptions{Tags: 1 << r.IntN(4), Hint: uint32(r.IntN(3)), Priority: r.IntN(3) - 1}
					old.AddWith(k, o)
					now.AddWith(k, o)
				case 3:
					require.Equal(t, now.View().Len(), old.Len())
					if old.Len() == 0 {
						continue
					}
					var err error
					buf, err = now.GetBatch(ctx, 1, buf[:0])
					require.NoError(t, err)
					if r.IntN(2) == 0 {
						h, err := old.GetHandout(ctx)
						require.NoError(t, err)
						require.Equal(t, buf[0], h)
					} else {
						key, tags, err := old.GetTagged(ctx)
						require.NoError(t, err)
						require.Equal(t, buf[0].Key, key)
						require.Equal(t, buf[0].Tags, tags)
					}
				case 4:
					old.Done(k)
					now.Done(k)
				case 5:
					old.Forget(k)
					now.Forget(k)
				case 6:
					<-time.After(time.Duration(r.IntN(3)) * time.Millisecond) // the bubble's clock
					synctest.Wait()
				}
				requireSameView(t, old, now.View(), k)
			}
			old.ShutDown()
			now.ShutDown()
			require.Equal(t, now.View().ShuttingDown(), old.ShuttingDown())
		})
	}
}

// requireSameView compares what old's deprecated names report with what
// v reports.
func requireSameView(t *testing.T, old *Queue[int], v View[int], k int) {
	t.Helper()
	require.Equal(t, v.Len(), old.Len())
	require.Equal(t, v.Queued(k), old.Queued(k))
	require.Equal(t, v.Retries(k), old.Retries(k))
	require.Equal(t, v.Stats(), old.Stats())
	require.Equal(t, v.Snapshot(), old.Snapshot())
	require.Equal(t, byKey(v.Processing()), byKey(old.Processing()))
	got, ok := old.Describe(k)
	want, wantOK := v.Describe(k)
	require.Equal(t, wantOK, ok)
	require.Equal(t, want, got)
	type seen struct {
		h Handout[int]
		s State
	}
	var a, b []seen
	old.States(func(h Handout[int], s State) { a = append(a, seen{h, s}) })
	v.States(func(h Handout[int], s State) { b = append(b, seen{h, s}) })
	require.Equal(t, b, a)
	dueA, dueB := map[int]int{}, map[int]int{}
	old.DueByPriority(func(p, n int) { dueA[p] = n })
	v.DueByPriority(func(p, n int) { dueB[p] = n })
	require.Equal(t, dueB, dueA)
	// Items is Snapshot in no particular order, without Retries.
	snap := v.Snapshot()
	for i := range snap {
		snap[i].Retries = 0
	}
	require.Equal(t, byKey(snap), byKey(old.Items()))
}

func byKey(items []Item[int]) []Item[int] {
	slices.SortFunc(items, func(a, b Item[int]) int { return cmp.Compare(a.Key, b.Key) })
	return items
}
