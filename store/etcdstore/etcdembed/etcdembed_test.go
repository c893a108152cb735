package etcdembed_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/converge-go/converge/store/etcdstore/etcdembed"
)

// A started member serves a client of its endpoint at once, and closing
// the client and then the member leaves no goroutine behind.
func TestStartedMemberServesAClientOfItsEndpoint(t *testing.T) {
	defer goleak.VerifyNone(t)
	member, err := etcdembed.Start(t.TempDir())
	require.NoError(t, err)
	defer member.Close()
	client, err := etcdembed.NewClient(etcdembed.Endpoint(member))
	require.NoError(t, err)
	defer func() { assert.NoError(t, client.Close()) }()

	_, err = client.Put(t.Context(), "k", "v")
	require.NoError(t, err)
	got, err := client.Get(t.Context(), "k")
	require.NoError(t, err)
	require.Len(t, got.Kvs, 1)
	assert.Equal(t, "v", string(got.Kvs[0].Value))
}
