package fakegithub

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// revokedReply is the 401 each kind answers while credentials are revoked.
func revokedReply(k kind) reply {
	if k.restHost() {
		return ghError(http.StatusUnauthorized, "Bad credentials")
	}
	return exception(http.StatusUnauthorized, "GitHub.Services.WebApi.VssUnauthorizedException", "The access token is invalid or expired.")
}

// reply is what a handler answers; the wrapper adds headers and writes it.
type reply struct {
	status int
	body   any    // JSON-encoded when raw is nil
	raw    []byte // sent as is
	ctype  string
	header http.Header
	free   bool // a 304: costs no budget
	// drop: the request took effect, then the connection is closed
	// without an answer (an answer cut off on its way).
	drop  bool
	token tokenInfo
}

func jsonReply(status int, body any) reply { return reply{status: status, body: body} }

const docsURL = "https://docs.github.com/rest"

// ghError is GitHub's REST error body.
func ghError(status int, msg string) reply {
	return jsonReply(status, map[string]string{"message": msg, "documentation_url": docsURL, "status": strconv.Itoa(status)})
}

// exception is the Actions service's error body.
func exception(status int, typeName, msg string) reply {
	return jsonReply(status, map[string]any{"typeName": typeName, "message": msg, "errorCode": 0})
}

// hangUp closes the request's connection without an answer.
func hangUp(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			_ = conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}

func faultReply(f Fault) reply {
	rep := ghError(f.Status, http.StatusText(f.Status))
	if (f.Status == http.StatusForbidden || f.Status == http.StatusTooManyRequests) && f.RetryAfter > 0 {
		rep = secondaryLimitReply()
		rep.status = f.Status
	}
	if f.Body != "" {
		rep = reply{status: f.Status, raw: []byte(f.Body), ctype: "application/octet-stream"}
	}
	if f.RetryAfter > 0 {
		rep.header = http.Header{"Retry-After": {strconv.Itoa(int(math.Ceil(f.RetryAfter.Seconds())))}}
	}
	rep.free = true
	return rep
}

// secondaryLimitReply is GitHub's secondary-limit body (go-github tells it
// by its documentation_url).
func secondaryLimitReply() reply {
	rep := ghError(http.StatusForbidden, "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.")
	rep.body.(map[string]string)["documentation_url"] = "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"
	return rep
}

func (s *Server) write(w http.ResponseWriter, k kind, rep reply) {
	h := w.Header()
	for key, v := range rep.header {
		h[key] = v
	}
	if k.restHost() && s.cfg.rateLimitingOff {
		h.Set("X-GitHub-Request-Id", strings.ToUpper(hex.EncodeToString(randomBytes(8))))
	} else if k.restHost() {
		s.mu.Lock()
		s.refreshRate()
		if k.charged() && !rep.free && s.rate.remaining > 0 {
			s.rate.remaining--
		}
		rate := s.rate
		s.mu.Unlock()
		h.Set("X-RateLimit-Limit", strconv.Itoa(rate.limit))
		h.Set("X-RateLimit-Remaining", strconv.Itoa(rate.remaining))
		h.Set("X-RateLimit-Used", strconv.Itoa(rate.limit-rate.remaining))
		h.Set("X-RateLimit-Reset", strconv.FormatInt(rate.reset.Unix(), 10))
		h.Set("X-RateLimit-Resource", "core")
		h.Set("X-GitHub-Request-Id", strings.ToUpper(hex.EncodeToString(randomBytes(8))))
	} else {
		h.Set("ActivityId", hex.EncodeToString(randomBytes(16)))
	}
	body := rep.raw
	if body == nil && rep.body != nil {
		var err error
		if body, err = json.Marshal(rep.body); err != nil {
			rep.status, body = http.StatusInternalServerError, []byte(`{"message":"fake: cannot encode reply"}`)
		}
	}
	if rep.status == http.StatusNoContent || rep.status == http.StatusNotModified || rep.status == http.StatusAccepted {
		body = nil
	}
	if body != nil {
		ct := rep.ctype
		if ct == "" {
			ct = "application/json; charset=utf-8"
		}
		h.Set("Content-Type", ct)
		h.Set("Content-Length", strconv.Itoa(len(body)))
	}
	if rep.status == 0 {
		rep.status = http.StatusOK
	}
	w.WriteHeader(rep.status)
	_, _ = w.Write(body)
}

// etag answers body with an ETag, or 304 (free) when the request's
// If-None-Match names it.
func etagReply(c *call, status int, body any, extra http.Header) reply {
	b, err := json.Marshal(body)
	if err != nil {
		return ghError(http.StatusInternalServerError, "fake: cannot encode reply")
	}
	sum := sha256.Sum256(b)
	tag := `W/"` + hex.EncodeToString(sum[:16]) + `"`
	h := http.Header{"Etag": {tag}, "Cache-Control": {"private, max-age=60, s-maxage=60"}, "Vary": {"Accept, Authorization"}}
	for _, cand := range strings.Split(c.r.Header.Get("If-None-Match"), ",") {
		cand = strings.TrimSpace(cand)
		if cand == tag || strings.TrimPrefix(cand, "W/") == strings.TrimPrefix(tag, "W/") || cand == "*" {
			return reply{status: http.StatusNotModified, header: h, free: true}
		}
	}
	for key, v := range extra {
		h[key] = v
	}
	return reply{status: status, raw: b, header: h}
}

// paginate returns the slice bounds of the requested page and the Link
// header for it (per_page at most 100, default 30).
func paginate(c *call, n int) (lo, hi int, h http.Header) {
	q := c.r.URL.Query()
	per, _ := strconv.Atoi(q.Get("per_page"))
	if per <= 0 {
		per = 30
	}
	per = min(per, 100)
	page, _ := strconv.Atoi(q.Get("page"))
	page = max(page, 1)
	last := max((n+per-1)/per, 1)
	lo = min((page-1)*per, n)
	hi = min(lo+per, n)
	u, err := url.Parse(c.r.RequestURI)
	if err != nil {
		return lo, hi, nil
	}
	link := func(p int, rel string) string {
		qq := u.Query()
		qq.Set("page", strconv.Itoa(p))
		qq.Set("per_page", strconv.Itoa(per))
		uu := url.URL{Scheme: "http", Host: c.r.Host, Path: u.Path, RawQuery: qq.Encode()}
		return fmt.Sprintf("<%s>; rel=%q", uu.String(), rel)
	}
	var links []string
	if page < last {
		links = append(links, link(page+1, "next"), link(last, "last"))
	}
	if page > 1 {
		links = append(links, link(page-1, "prev"), link(1, "first"))
	}
	if len(links) > 0 {
		h = http.Header{"Link": {strings.Join(links, ", ")}}
	}
	return lo, hi, h
}
