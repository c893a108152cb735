package checkpointtest_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/converge-go/converge/reconcile/checkpointtest"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/checkpoint"
)

// A checkpoint in memory, written, damaged, and written afresh whole.
func ExampleMemory() {
	cp := checkpointtest.NewMemory[string](nil)
	_, err := cp.Load()
	fmt.Println(errors.Is(err, checkpoint.ErrNone))

	put := []store.Object[string]{{Key: "a", Value: "1", Revision: 3, CreateRevision: 3}}
	fmt.Println(cp.Write(checkpoint.Batch[string]{Revision: 3, Seen: time.Now(), Replace: true, Put: put}))
	cp.SetDamaged(true)
	_, err = cp.Load()
	fmt.Println(errors.Is(err, checkpoint.ErrDamaged))
	fmt.Println(errors.Is(cp.Write(checkpoint.Batch[string]{Revision: 4, Delete: []string{"a"}}), checkpoint.ErrDamaged))
	fmt.Println(cp.Write(checkpoint.Batch[string]{Revision: 4, Replace: true, Put: put}))
	st, err := cp.Load()
	fmt.Println(st.Revision, len(st.Objects), err)
	// Output:
	// true
	// <nil>
	// true
	// true
	// <nil>
	// 4 1 <nil>
}
