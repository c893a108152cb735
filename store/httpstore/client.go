package httpstore

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/converge-go/converge/internal/traceparent"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/converge-go/converge/store"
)

// Client is a store.Store served by a Handler over HTTP: every controller,
// lease and helper that takes a store works over it unchanged. It is safe
// for concurrent use. Make one with New.
//
// Errors: every store error the server's store returns comes back as
// itself (errors.Is(err, store.ErrConflict) holds on the client as on the
// server); ErrUnauthorized and ErrForbidden report refused credentials. A
// request that got no answer fails with an error matching
// store.ErrUnavailable and wrapping the context's error if that was the
// cause, else the transport's (errors.As finds a *net.OpError, a TLS
// error): for a write, that means the write may or may not have happened;
// read the key to find out. An answer that is not this package's protocol
// is ErrProtocol. Every error names this package once. Arguments are
// checked before anything is sent, as by every store, so invalid input
// fails with store.ErrInvalid locally.
type Client[T any] struct {
	base         string // scheme://host[/path], no trailing slash
	hc           *http.Client
	owned        bool // hc was made by New: Close closes its connections
	token        string
	codec        store.Codec[T]
	plainJSON    bool                         // codec is store.JSON: answers decode in one pass (decodeAnswer)
	watchTimeout time.Duration                // 0: twice the server's heartbeat
	causeOf      func(context.Context) string // WithCauseOf; nil for none
}

var _ store.Store[int] = (*Client[int])(nil)

// New returns a client of the store served at baseURL (http:// or
// https://, with the path the Handler is mounted at, if any). It sends
// nothing until the first call. It fails with ErrInvalid for a malformed URL
// or a bad option.
func New[T any](baseURL string, opts ...ClientOption) (*Client[T], error) {
	var cfg clientConfig
	for _, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("%w: nil option", ErrInvalid)
		}
		o(&cfg)
	}
	switch {
	case len(cfg.bad) > 0:
		return nil, fmt.Errorf("%w: %s", ErrInvalid, cfg.bad[0])
	case cfg.tlsConfig != nil && cfg.httpClient != nil:
		return nil, fmt.Errorf("%w: WithTLSConfig and WithHTTPClient together (configure the HTTP client's transport)", ErrInvalid)
	}
	codec, err := codecOf[T](cfg.codec)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(baseURL)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w: base URL: %v", ErrInvalid, err)
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("%w: base URL %q: want an http:// or https:// URL", ErrInvalid, baseURL)
	case u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil:
		return nil, fmt.Errorf("%w: base URL %q: want scheme://host[:port][/path], without user, query or fragment", ErrInvalid, baseURL)
	}
	_, plainJSON := codec.(store.JSON[T])
	c := &Client[T]{base: strings.TrimSuffix(u.String(), "/"), hc: cfg.httpClient, token: cfg.token, codec: codec, plainJSON: plainJSON, watchTimeout: cfg.watchTimeout, causeOf: cfg.causeOf}
	if c.hc == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		// Keep connections for concurrent callers (the default keeps 2).
		tr.MaxIdleConnsPerHost = maxIdleConnsPerHost
		if cfg.tlsConfig != nil {
			tr.TLSClientConfig = cfg.tlsConfig.Clone()
		}
		c.hc = &http.Client{
			Transport: tr,
			// A redirect would replay a write elsewhere: never follow one.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
		c.owned = true
	}
	return c, nil
}

// maxIdleConnsPerHost is how many idle connections the client's own
// transport keeps to its server.
const maxIdleConnsPerHost = 64

// Close closes the idle connections of the client's own transport (none if
// it was given one with WithHTTPClient). Calls and watches still running
// are not affected; the client remains usable.
func (c *Client[T]) Close() error {
	if c.owned {
		c.hc.CloseIdleConnections()
	}
	return nil
}

// Codec returns the codec of the values on the wire (store.Encoded).
func (c *Client[T]) Codec() store.Codec[T] { return c.codec }

func checkCtx(ctx context.Context) error {
	if ctx == nil {
		return fmt.Errorf("%w: nil context", ErrInvalid)
	}
	return ctx.Err()
}

// newRequest builds a request to path with query q.
func (c *Client[T]) newRequest(ctx context.Context, method, path string, q url.Values, body []byte) (*http.Request, error) {
	u := c.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, fmt.Errorf("%w: request: %v", ErrInvalid, err)
	}
	if method == http.MethodPost {
		// Every POST says JSON, with a body or without (delete, progress):
		// the server refuses any other, as a web page could send it.
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	cause := store.CauseFrom(ctx)
	if cause == "" && c.causeOf != nil {
		cause, _ = traceparent.Clean(c.causeOf(ctx))
	}
	if cause != "" {
		req.Header.Set(headerTraceparent, cause)
	}
	return req, nil
}

// call sends a request and decodes a 2xx answer into out. write says
// whether the request may change the store, which decides how a lost
// answer is described.
func (c *Client[T]) call(ctx context.Context, method, path string, q url.Values, body []byte, write bool, out any) error {
	data, err := c.send(ctx, method, path, q, body, write)
	if err != nil {
		return err
	}
	return decodeAnswer(path, data, out)
}

// send sends a request and returns the body of a 2xx answer.
func (c *Client[T]) send(ctx context.Context, method, path string, q url.Values, body []byte, write bool) ([]byte, error) {
	if err := checkCtx(ctx); err != nil {
		return nil, err
	}
	req, err := c.newRequest(ctx, method, path, q, body)
	if err != nil {
		return nil, err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, lost(ctx, path, write, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, lost(ctx, path, write, err)
	}
	if resp.StatusCode/100 != 2 {
		return nil, responseError(resp, data)
	}
	return data, nil
}

func decodeAnswer(path string, data []byte, out any) error {
	if err := json.Unmarshal(data, out); err != nil {
		return protocolErrorf("%s: undecodable answer: %w", path, err)
	}
	return nil
}

// typedObject is a wire object decoded with its value in one pass, for a
// client whose codec is store.JSON. Value is nil if the answer has none or
// null: such answers take the general path, which says what is wrong.
type typedObject[T any] struct {
	Key            string `json:"key"`
	Value          *T     `json:"value"`
	Revision       int64  `json:"revision"`
	CreateRevision int64  `json:"createRevision"`
	Deleted        bool   `json:"deleted"`
}

// object decodes an answer that is one object, and whether it says the
// write deleted it (wireObject.Deleted): with the codec store.JSON in one
// pass, else (or if that fails) as a wire object whose value the codec
// then decodes.
func (c *Client[T]) object(path string, data []byte) (store.Object[T], bool, error) {
	if c.plainJSON {
		var to typedObject[T]
		if json.Unmarshal(data, &to) == nil && to.Value != nil {
			return store.Object[T]{Key: to.Key, Value: *to.Value, Revision: to.Revision, CreateRevision: to.CreateRevision}, to.Deleted, nil
		}
	}
	var wo wireObject
	if err := decodeAnswer(path, data, &wo); err != nil {
		return store.Object[T]{}, false, err
	}
	obj, err := c.decodeObject(wo)
	return obj, wo.Deleted, err
}

// lost describes a request that got no (complete) answer. It wraps err,
// the transport's error, so that callers can tell a TLS alert or a
// *net.OpError; its context's error when that ended the request.
func lost(ctx context.Context, path string, write bool, err error) error {
	what := ""
	if write {
		what = " (the write may have happened)"
	}
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("httpstore: %s: %w%s: %w", path, store.ErrUnavailable, what, cerr)
	}
	return fmt.Errorf("httpstore: %s: %w%s: %w", path, store.ErrUnavailable, what, err)
}

// responseError turns a refusal into the error it names. A 401 or 403
// answered by what stands in front of the handler (a manager's server
// checking tokens, a proxy) is ErrUnauthorized or ErrForbidden all the
// same: nothing was read or written.
func responseError(resp *http.Response, data []byte) error {
	var eb errorBody
	if err := json.Unmarshal(data, &eb); err != nil || eb.Error.Code == "" {
		snippet := string(data[:min(len(data), 200)])
		switch resp.StatusCode {
		case http.StatusUnauthorized:
			return fmt.Errorf("%w: status %s: %q", ErrUnauthorized, resp.Status, snippet)
		case http.StatusForbidden:
			return fmt.Errorf("%w: status %s: %q", ErrForbidden, resp.Status, snippet)
		}
		return protocolErrorf("status %s: %q", resp.Status, snippet)
	}
	return eb.Error.decode()
}

// decodeObject turns a wire object into a store object.
func (c *Client[T]) decodeObject(wo wireObject) (store.Object[T], error) {
	v, err := c.codec.Unmarshal(wo.Value)
	if err != nil {
		return store.Object[T]{}, fmt.Errorf("%w: the value of %q does not decode: %w", ErrProtocol, wo.Key, err)
	}
	return store.Object[T]{Key: wo.Key, Value: v, Revision: wo.Revision, CreateRevision: wo.CreateRevision}, nil
}

// Get returns the object stored at key, or store.ErrNotFound.
func (c *Client[T]) Get(ctx context.Context, key string) (store.Object[T], error) {
	if err := store.ValidateKey(key); err != nil {
		return store.Object[T]{}, err
	}
	data, err := c.send(ctx, http.MethodGet, pathGet, url.Values{paramKey: {key}}, nil, false)
	if err != nil {
		return store.Object[T]{}, err
	}
	obj, _, err := c.object(pathGet, data)
	return obj, err
}

// List returns the objects under prefix, sorted by key, with the revision
// of the server store's snapshot.
func (c *Client[T]) List(ctx context.Context, prefix string) ([]store.Object[T], int64, error) {
	if err := store.ValidatePrefix(prefix); err != nil {
		return nil, 0, err
	}
	var body listBody
	if err := c.call(ctx, http.MethodGet, pathList, url.Values{paramPrefix: {prefix}}, nil, false, &body); err != nil {
		return nil, 0, err
	}
	objs := make([]store.Object[T], 0, len(body.Objects))
	for _, wo := range body.Objects {
		obj, err := c.decodeObject(wo)
		if err != nil {
			return nil, 0, err
		}
		objs = append(objs, obj)
	}
	return objs, body.Revision, nil
}

// Revision returns the server store's current revision.
func (c *Client[T]) Revision(ctx context.Context) (int64, error) {
	var body revisionBody
	if err := c.call(ctx, http.MethodGet, pathRevision, nil, nil, false, &body); err != nil {
		return 0, err
	}
	return body.Revision, nil
}

// writeQuery checks a write's arguments and returns its query.
func writeQuery(key string, revision int64, withRevision bool, guards []store.Guard) (url.Values, error) {
	if err := store.ValidateKey(key); err != nil {
		return nil, err
	}
	if err := store.ValidateRevision(revision); err != nil {
		return nil, err
	}
	if err := store.ValidateGuards(guards); err != nil {
		return nil, err
	}
	q := url.Values{paramKey: {key}}
	if withRevision {
		q.Set(paramRevision, strconv.FormatInt(revision, 10))
	}
	for _, g := range guards {
		q.Add(paramGuard, encodeGuard(g))
	}
	return q, nil
}

// encodeValue checks and encodes a written value.
func (c *Client[T]) encodeValue(value T) ([]byte, error) {
	if err := store.ValidateValue(value); err != nil {
		return nil, err
	}
	return c.codec.Marshal(value)
}

// Create stores value at key if the key does not exist, else returns
// store.ErrExists. An error matching store.ErrUnavailable means the answer
// was lost: the key may have been created.
func (c *Client[T]) Create(ctx context.Context, key string, value T, guards ...store.Guard) (store.Object[T], error) {
	obj, _, err := c.put(ctx, pathCreate, key, value, 0, false, guards)
	return obj, err
}

// Update replaces the value at key if its revision is still revision, else
// returns store.ErrConflict (or store.ErrNotFound). An error matching
// store.ErrUnavailable means the answer was lost: the update may have
// happened. The object returned is the value as the server's store keeps
// it: over the API-server layer, with the layer's generation and status
// (see Replace).
func (c *Client[T]) Update(ctx context.Context, key string, value T, revision int64, guards ...store.Guard) (store.Object[T], error) {
	obj, _, err := c.put(ctx, pathUpdate, key, value, revision, true, guards)
	return obj, err
}

// put writes value to path and returns the object answered and whether
// the answer says the write deleted it.
func (c *Client[T]) put(ctx context.Context, path, key string, value T, revision int64, withRevision bool, guards []store.Guard) (store.Object[T], bool, error) {
	q, err := writeQuery(key, revision, withRevision, guards)
	if err != nil {
		return store.Object[T]{}, false, err
	}
	body, err := c.encodeValue(value)
	if err != nil {
		return store.Object[T]{}, false, err
	}
	data, err := c.send(ctx, http.MethodPost, path, q, body, true)
	if err != nil {
		return store.Object[T]{}, false, err
	}
	obj, deleted, err := c.object(path, data)
	if err != nil {
		return store.Object[T]{}, false, err
	}
	if obj.Key != key {
		return store.Object[T]{}, false, protocolErrorf("wrote %q, the server answered for %q", key, obj.Key)
	}
	return obj, deleted, nil
}

var _ store.Checker = (*Client[int])(nil)

// Check asks the server whether key is still at revision and every guard
// holds, and writes nothing (store.Checker): atomically if the served store
// is a store.Checker, as every store of this module is. It needs a token
// that may write, as the write it stands for would.
func (c *Client[T]) Check(ctx context.Context, key string, revision int64, guards ...store.Guard) error {
	q, err := writeQuery(key, revision, true, guards)
	if err != nil {
		return err
	}
	var body revisionBody
	if err := c.call(ctx, http.MethodPost, pathCheck, q, nil, false, &body); err != nil {
		return err
	}
	if body.Revision != revision {
		return protocolErrorf("%s: checked revision %d, the server answered for %d", pathCheck, revision, body.Revision)
	}
	return nil
}

// Delete removes key if its revision is still revision, else returns
// store.ErrConflict (or store.ErrNotFound). An error matching
// store.ErrUnavailable means the answer was lost: the key may have been
// deleted. Over the API-server layer, an object with finalizers is marked
// instead, and the revision is the mark's; DeleteWith says which happened.
func (c *Client[T]) Delete(ctx context.Context, key string, revision int64, guards ...store.Guard) (int64, error) {
	q, err := writeQuery(key, revision, true, guards)
	if err != nil {
		return 0, err
	}
	var body revisionBody
	if err := c.call(ctx, http.MethodPost, pathDelete, q, nil, true, &body); err != nil {
		return 0, err
	}
	return body.Revision, nil
}
