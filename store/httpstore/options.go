package httpstore

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"time"

	"github.com/converge-go/converge/internal/bearer"
	"github.com/converge-go/converge/internal/httpguard"
	"github.com/converge-go/converge/store"
)

// Defaults of the handler's limits.
const (
	// DefaultHeartbeat is how often a watch stream carries a heartbeat.
	DefaultHeartbeat = 5 * time.Second
	// DefaultMaxWatches bounds the watches one handler serves at once.
	DefaultMaxWatches = 1000
	// DefaultMaxBodyBytes bounds a request body: the encoded value of a
	// write.
	DefaultMaxBodyBytes = store.DefaultMaxValueSize
)

// HandlerOption configures NewHandler. Out-of-range values make NewHandler
// fail with an error matching store.ErrInvalid.
type HandlerOption func(*handlerConfig)

type handlerConfig struct {
	codec        any // store.Codec[T], checked by NewHandler
	rwTokens     []string
	roTokens     []string
	creds        credentials // from the tokens, made by newHandlerConfig
	heartbeat    time.Duration
	maxWatches   int
	maxBodyBytes int64
	browsers     httpguard.Policy
	kinds        []byte // the kinds document served at /v1/kinds; nil: none
}

// WithKinds serves doc, the kinds document the store's layer was made
// from (store/apistore/schema's rules, with their printer columns), at
// /v1/kinds, for clients to show objects as their kinds declare
// (Client.Kinds; convergectl get -o table). doc must be a JSON object,
// or NewHandler fails with ErrInvalid. It is served to every token that
// may read.
func WithKinds(doc []byte) HandlerOption {
	return func(c *handlerConfig) { c.kinds = append([]byte{}, doc...) }
}

// WithAllowedHosts adds host names (bare names, without scheme or port) that
// the handler answers to. Whatever the tokens, a request whose Host header
// names another host is refused with 403 (ErrForbidden on the client) and
// reaches nothing: that is the defence against DNS rebinding, where a web
// page makes its own name resolve to this server. IP literals, "localhost"
// and names under ".localhost" are always served; list the machine's DNS
// name here when clients reach the store by it. "*" serves every name,
// giving up that defence. A malformed name makes NewHandler fail with
// ErrInvalid.
func WithAllowedHosts(hosts ...string) HandlerOption {
	return func(c *handlerConfig) { c.browsers.Hosts = append(c.browsers.Hosts, hosts...) }
}

// WithTrustedOrigins adds web origins ("https://console.example:8443",
// scheme, host and port only) whose pages may write. A state-changing
// request (POST) that a browser marks as coming from any other origin
// (Sec-Fetch-Site, Origin; a page opened from a file has origin "null") is
// refused with 403 (ErrForbidden on the client) and changes nothing,
// whatever its credentials. Requests without these headers (Go clients,
// curl, scripts) are not affected. A malformed origin makes NewHandler fail
// with ErrInvalid.
func WithTrustedOrigins(origins ...string) HandlerOption {
	return func(c *handlerConfig) { c.browsers.Origins = append(c.browsers.Origins, origins...) }
}

// WithReadWriteToken adds a bearer token that may read and write. Once any
// token is configured every request must carry one of them
// ("Authorization: Bearer TOKEN"); with none, the handler serves every
// program that reaches it (protect it with TLS client certificates or a
// private network; web pages are refused either way, see WithAllowedHosts
// and WithTrustedOrigins). A token that HTTP could not carry exactly in
// a header (empty, with white space at either end, which HTTP drops, or
// with a control character) makes NewHandler fail with ErrInvalid; the
// error names the token's kind and position, never its text.
func WithReadWriteToken(tok string) HandlerOption {
	return func(c *handlerConfig) { c.rwTokens = append(c.rwTokens, tok) }
}

// WithReadOnlyToken adds a bearer token that may read (Get, List, Revision,
// Watch and progress requests) but not write: its writes are refused with
// 403 (ErrForbidden on the client) and change nothing. A token also given
// to WithReadWriteToken may write. Tokens are checked as
// WithReadWriteToken's are.
func WithReadOnlyToken(tok string) HandlerOption {
	return func(c *handlerConfig) { c.roTokens = append(c.roTokens, tok) }
}

// WithHeartbeat sets how often a watch stream carries a heartbeat (at least
// 1 ms; default DefaultHeartbeat): the handler then asks the store's watch
// for progress and writes a ping, so a client hears from a live stream at
// least this often.
func WithHeartbeat(d time.Duration) HandlerOption {
	return func(c *handlerConfig) { c.heartbeat = d }
}

// WithMaxWatches bounds the watches served at once (at least 1; default
// DefaultMaxWatches). A watch beyond it is refused with 429, which the
// client returns as ErrTooManyWatches (matching store.ErrUnavailable).
func WithMaxWatches(n int) HandlerOption {
	return func(c *handlerConfig) { c.maxWatches = n }
}

// WithMaxBodyBytes bounds a request body, that is a written value's
// encoding (at least 1; default DefaultMaxBodyBytes). A larger body is
// refused with 413 and code "invalid" (store.ErrInvalid on the client),
// and nothing is written.
func WithMaxBodyBytes(n int64) HandlerOption {
	return func(c *handlerConfig) { c.maxBodyBytes = n }
}

// WithHandlerCodec sets the codec of the values on the wire (store.JSON by
// default). Its type parameter must be the handler's; a client of it needs
// the same codec (WithClientCodec).
func WithHandlerCodec[T any](codec store.Codec[T]) HandlerOption {
	return func(c *handlerConfig) { c.codec = codec }
}

func newHandlerConfig[T any](opts []HandlerOption) (store.Codec[T], *httpguard.Guard, handlerConfig, error) {
	c := handlerConfig{heartbeat: DefaultHeartbeat, maxWatches: DefaultMaxWatches, maxBodyBytes: DefaultMaxBodyBytes}
	for _, o := range opts {
		if o == nil {
			return nil, nil, c, fmt.Errorf("%w: nil option", ErrInvalid)
		}
		o(&c)
	}
	switch {
	case c.heartbeat < time.Millisecond:
		return nil, nil, c, fmt.Errorf("%w: heartbeat %v, want at least 1ms", ErrInvalid, c.heartbeat)
	case c.maxWatches < 1:
		return nil, nil, c, fmt.Errorf("%w: max watches %d, want at least 1", ErrInvalid, c.maxWatches)
	case c.maxBodyBytes < 1:
		return nil, nil, c, fmt.Errorf("%w: max body bytes %d, want at least 1", ErrInvalid, c.maxBodyBytes)
	case c.kinds != nil && !isJSONObject(c.kinds):
		return nil, nil, c, fmt.Errorf("%w: the kinds document is not a JSON object", ErrInvalid)
	}
	guard, err := httpguard.New(c.browsers)
	if err != nil {
		return nil, nil, c, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if c.creds, err = newCredentials(c.rwTokens, c.roTokens); err != nil {
		return nil, nil, c, err
	}
	codec, err := codecOf[T](c.codec)
	return codec, guard, c, err
}

// codecOf returns the configured codec, or store.JSON when there is none.
func codecOf[T any](v any) (store.Codec[T], error) {
	if v == nil {
		return store.JSON[T]{}, nil
	}
	codec, ok := v.(store.Codec[T])
	if !ok || codec == nil {
		return nil, fmt.Errorf("%w: codec %T is not a store.Codec of the store's value type", ErrInvalid, v)
	}
	return codec, nil
}

// ClientOption configures New. Out-of-range values make New fail with an
// error matching store.ErrInvalid.
type ClientOption func(*clientConfig)

type clientConfig struct {
	codec        any
	token        string
	tlsConfig    *tls.Config
	httpClient   *http.Client
	watchTimeout time.Duration
	causeOf      func(context.Context) string
	bad          []string
}

// WithToken sends tok as a bearer token with every request. A token that
// a handler would refuse to be configured with (see WithReadWriteToken)
// makes New fail with ErrInvalid, without its text.
func WithToken(tok string) ClientOption {
	return func(c *clientConfig) {
		if _, err := bearer.NewSet([]string{tok}); err != nil {
			c.bad = append(c.bad, detail(err, bearer.ErrInvalid))
		}
		c.token = tok
	}
}

// WithTLSConfig sets the TLS configuration of the client's connections:
// the roots that verify the server and, for servers that require them,
// the client's certificates. The client owns a copy. It cannot be combined
// with WithHTTPClient (configure that client's transport instead).
func WithTLSConfig(cfg *tls.Config) ClientOption {
	return func(c *clientConfig) {
		if cfg == nil {
			c.bad = append(c.bad, "nil TLS config")
		}
		c.tlsConfig = cfg
	}
}

// WithHTTPClient makes the client send its requests through hc, which the
// caller owns. hc must not have a Timeout: watches are long requests, and
// the client bounds every call by its context and every watch by its
// heartbeats instead.
func WithHTTPClient(hc *http.Client) ClientOption {
	return func(c *clientConfig) {
		if hc == nil {
			c.bad = append(c.bad, "nil HTTP client")
		}
		c.httpClient = hc
	}
}

// WithWatchTimeout sets how long a watch stream may stay silent before the
// client judges it dead (at least 1 ms). By default it is twice the
// heartbeat the server announces when the stream opens, and
// DefaultWatchTimeout while a stream is being opened.
func WithWatchTimeout(d time.Duration) ClientOption {
	return func(c *clientConfig) {
		if d < time.Millisecond {
			c.bad = append(c.bad, fmt.Sprintf("watch timeout %v, want at least 1ms", d))
		}
		c.watchTimeout = d
	}
}

// WithCauseOf makes the client take a write's cause from f(ctx) when ctx
// carries none (store.WithCause): give it a tracing library's way to
// write the span in ctx as a W3C traceparent (convergeotel.CauseOf), and
// every write made with a context holding a span carries it, as the
// traceparent header, to the revision it makes. A value that is no
// traceparent is not sent. f must not block.
func WithCauseOf(f func(ctx context.Context) string) ClientOption {
	return func(c *clientConfig) {
		if f == nil {
			c.bad = append(c.bad, "nil cause function")
		}
		c.causeOf = f
	}
}

// DefaultWatchTimeout bounds the opening of a watch stream when
// WithWatchTimeout is not given: twice DefaultHeartbeat.
const DefaultWatchTimeout = 2 * DefaultHeartbeat

// WithClientCodec sets the codec of the values on the wire (store.JSON by
// default); it must be the server's. Its type parameter must be the
// client's.
func WithClientCodec[T any](codec store.Codec[T]) ClientOption {
	return func(c *clientConfig) { c.codec = codec }
}
