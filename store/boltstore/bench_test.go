package boltstore_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/converge-go/converge/store/boltstore"
)

// BenchmarkCreate measures durable creates (each acknowledged after its
// commit is synced) by 1 and by 8 concurrent writers; ns/op is the time per
// write, so the ratio of the two is the gain from shared commits.
//
// Measured on the project's 2-core build machine (Linux, virtio disk, fsync
// about 0.5 ms), Go 1.26:
//
//	go test -run '^$' -bench BenchmarkCreate -benchmem -count 3 ./store/boltstore
//
//	BenchmarkCreate/writers=1   ~1.5 ms/op   ~5.3 KB/op   ~60 allocs/op
//	BenchmarkCreate/writers=8   ~0.16 ms/op  ~4.5 KB/op   ~58 allocs/op
//
// that is about 9 times the throughput with 8 writers.
func BenchmarkCreate(b *testing.B) {
	for _, writers := range []int{1, 8} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			s, err := boltstore.Open[*item](b.TempDir() + "/bench.db")
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			ctx := b.Context()
			value := &item{N: 1, S: "a value of modest size, as status objects go"}
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ReportAllocs()
			b.ResetTimer()
			for range writers {
				wg.Go(func() {
					for {
						i := next.Add(1)
						if i > int64(b.N) {
							return
						}
						if _, err := s.Create(ctx, fmt.Sprint("key/", i), value); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
		})
	}
}
