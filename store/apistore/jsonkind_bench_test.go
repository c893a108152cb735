package apistore_test

import (
	"encoding/json"
	"testing"

	"github.com/converge-go/converge/store/apistore"
)

// BenchmarkJSONKind measures JSONKind's methods on a value of modest size,
// as the layer calls them on every write: each parses its arguments.
//
//	go test -run '^$' -bench BenchmarkJSONKind -benchmem ./store/apistore
func BenchmarkJSONKind(b *testing.B) {
	v := json.RawMessage(`{"metadata":{"generation":2,"finalizers":["app/cleanup"]},` +
		`"spec":{"replicas":3,"image":"registry.example/app:1.2.3","ports":[80,443],` +
		`"env":{"MODE":"prod","RATIO":"0.25"},"limits":{"cpu":1.5,"memory":2e9}},` +
		`"status":{"ready":3,"note":"all replicas are ready"},"observedGeneration":2}`)
	k := apistore.JSONKind{}
	b.Run("Meta", func(b *testing.B) {
		for b.Loop() {
			if _, err := k.Meta(v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("SameSpec", func(b *testing.B) {
		for b.Loop() {
			if _, err := k.SameSpec(v, v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Merge", func(b *testing.B) {
		for b.Loop() {
			if _, err := k.Merge(v, v); err != nil {
				b.Fatal(err)
			}
		}
	})
}
