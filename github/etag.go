package github

import (
	"bytes"
	"container/list"
	"io"
	"net/http"
	"strings"
	"sync"
)

// maxCachedBody bounds one cached response; larger bodies are not cached.
const maxCachedBody = 1 << 20

// etagCache remembers the last 200 answer of GET requests that carried an
// ETag, keyed by credentials identity, Accept and URL, least recently used
// first out.
type etagCache struct {
	mu    sync.Mutex
	max   int
	order *list.List // of *etagEntry, front = most recent
	byKey map[string]*list.Element
}

type etagEntry struct {
	key    string
	etag   string
	header http.Header
	body   []byte
}

func newETagCache(max int) *etagCache {
	return &etagCache{max: max, order: list.New(), byKey: map[string]*list.Element{}}
}

func (c *etagCache) get(key string) *etagEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byKey[key]; ok {
		return el.Value.(*etagEntry)
	}
	return nil
}

func (c *etagCache) touch(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byKey[key]; ok {
		c.order.MoveToFront(el)
	}
}

// len is the number of cached responses.
func (c *etagCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

// store reads resp's body (replacing it with the bytes read) and caches it
// unless it is too large.
func (c *etagCache) store(key string, resp *http.Response) {
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxCachedBody+1))
	if err != nil || len(b) > maxCachedBody {
		resp.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(b), errReader{err}), resp.Body}
		return
	}
	_ = resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(b))
	e := &etagEntry{key: key, etag: resp.Header.Get("ETag"), header: resp.Header.Clone(), body: b}

	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byKey[key]; ok {
		el.Value = e
		c.order.MoveToFront(el)
		return
	}
	c.byKey[key] = c.order.PushFront(e)
	for c.order.Len() > c.max {
		old := c.order.Back()
		c.order.Remove(old)
		delete(c.byKey, old.Value.(*etagEntry).key)
	}
}

// response rebuilds the cached 200 answer for req, with the fresh
// rate-limit headers of the 304 that revalidated it and X-From-Cache set.
func (e *etagEntry) response(req *http.Request, fresh http.Header) *http.Response {
	h := e.header.Clone()
	for k, v := range fresh {
		if strings.HasPrefix(strings.ToLower(k), "x-ratelimit-") {
			h[k] = v
		}
	}
	h.Set("X-From-Cache", "1")
	return &http.Response{
		Status:        "200 OK",
		StatusCode:    http.StatusOK,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		Body:          io.NopCloser(bytes.NewReader(e.body)),
		ContentLength: int64(len(e.body)),
		Request:       req,
	}
}
