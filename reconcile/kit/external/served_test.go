package external_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/kit/external"
	"github.com/converge-go/converge/reconcile/kit/external/externaltest"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/store"
)

// TestAnOperatorOnAStoreServerConverges: the kit's operator, on a client
// of a store server, makes the object, records it, and on a delete made
// through the server deletes it and lets the resource go.
func TestAnOperatorOnAStoreServerConverges(t *testing.T) {
	s := externaltest.Serve[vmSpec, vmStatus](t)
	fake := externaltest.NewFake[vmSpec]()
	r, err := external.New(s, externaltest.Client(fake, externaltest.FakeOptions[vmSpec, vmStatus]{}),
		external.Options[vmSpec, vmStatus]{Name: "vmop", Prefix: "vms/",
			Record: func(st *vmStatus) *external.Record { return &st.External }})
	require.NoError(t, err)
	c, err := reconcile.New(s, r, reconcile.Options[*vm]{Name: "vms", Prefix: "vms/", Sources: r.Sources()})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	defer func() { cancel(); require.NoError(t, <-done) }()

	obj, err := resource.PutSpec(t.Context(), s, key, vmSpec{Size: 2})
	require.NoError(t, err)
	require.NoError(t, c.WaitForRevision(t.Context(), obj.Revision))
	obj, err = s.Get(t.Context(), key)
	require.NoError(t, err)
	require.Len(t, fake.Objects(), 1)
	require.Equal(t, fake.Objects()[0].Name, obj.Value.Status.External.Name)

	rev, err := s.Delete(t.Context(), key, obj.Revision)
	require.NoError(t, err)
	require.NoError(t, c.WaitForRevision(t.Context(), rev))
	_, err = s.Get(t.Context(), key)
	require.ErrorIs(t, err, store.ErrNotFound)
	require.Empty(t, fake.Objects())
}
