package httpstore_test

import (
	"encoding/json"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
	"github.com/converge-go/converge/store/apistore/apistoretest"
	"github.com/converge-go/converge/store/httpstore/httpstoretest"
)

// serveLayer is apistoretest's Serve over HTTP: the layer over raw,
// served by a handler on an httptest server, and its client.
func serveLayer(t *testing.T, raw store.Store[json.RawMessage], layer []apistore.Option[json.RawMessage]) apistoretest.Layer {
	return httpstoretest.ServeLayer(t, raw, apistore.JSONKind{}, httpstoretest.Options{}, layer...)
}

// TestTheAPIServerLayerKeepsEveryClauseOverHTTPOverMemory runs the layer's
// suite through the HTTP-served store: the handler applies the layer over
// a View of a memory byte store, and the suite talks to the client.
func TestTheAPIServerLayerKeepsEveryClauseOverHTTPOverMemory(t *testing.T) {
	apistoretest.RunWith(t, func(t *testing.T) store.Store[json.RawMessage] {
		m := store.NewMemory[[]byte]()
		t.Cleanup(func() { _ = m.Close() })
		return store.NewView[json.RawMessage](m, store.JSON[json.RawMessage]{})
	}, apistoretest.Options{Serve: serveLayer})
}

// widget is a typed resource for the layer over HTTP: Go values on both
// sides, encoded by store.JSON, with the layer's metadata embedded (so
// that it has Deleting, as reconcile looks for).
type widget struct {
	apistore.Meta `json:"metadata"`
	Spec          widgetSpec   `json:"spec"`
	Status        widgetStatus `json:"status"`
}

type widgetSpec struct {
	Size int `json:"size"`
}

type widgetStatus struct {
	Ready    bool  `json:"ready"`
	Observed int64 `json:"observed,omitempty"`
}

// widgetKind is widget's apistore.Kind.
type widgetKind struct{}

func (widgetKind) Meta(v widget) (apistore.Meta, error) { return v.Meta, nil }

func (widgetKind) WithMeta(v widget, m apistore.Meta) (widget, error) {
	v.Meta = m
	return v, nil
}

func (widgetKind) SameSpec(a, b widget) (bool, error) { return a.Spec == b.Spec, nil }

func (widgetKind) Merge(spec, status widget) (widget, error) {
	spec.Status = status.Status
	return spec, nil
}
