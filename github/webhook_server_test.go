package github_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/github"
)

var hookSecret = []byte("hook-secret")

// hookRecorder collects the nudges a webhook server passes on.
type hookRecorder struct {
	mu  sync.Mutex
	got []github.WorkflowJobEvent
}

func (r *hookRecorder) nudge(ev github.WorkflowJobEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, ev)
}

func (r *hookRecorder) events() []github.WorkflowJobEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]github.WorkflowJobEvent(nil), r.got...)
}

// serveWebhooks runs ServeWebhooks on a loopback port for the test and
// returns its address.
func serveWebhooks(t *testing.T, rec *hookRecorder, opts ...github.WebhookOption) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- github.ServeWebhooks(ctx, l, hookSecret, rec.nudge, opts...) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return l.Addr().String()
}

func signHook(body []byte) string {
	return "sha256=" + hex.EncodeToString(github.Sign(hookSecret, body))
}

// postHook sends a workflow_job delivery and returns the status.
func postHook(t *testing.T, addr, delivery string, body []byte, sig string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("X-GitHub-Event", "workflow_job")
	req.Header.Set("X-GitHub-Delivery", delivery)
	if sig != "" {
		req.Header.Set("X-Hub-Signature-256", sig)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// zeros is an endless body that costs no memory to send.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// onlyReader hides a reader's type, so the client cannot learn its length
// and sends it chunked.
type onlyReader struct{ io.Reader }

func rssKiB() string {
	b, _ := os.ReadFile("/proc/self/status")
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "?"
}

// TestWebhookBigBodiesCostNoMemory sends 24 bodies of 24 MiB at once, three
// ways (unsigned; with a forged signature and a Content-Length; forged and
// chunked, so the length is learnt only by reading), and holds the memory
// the whole test allocated meanwhile under a bound that buffering them
// (576 MiB) cannot meet.
func TestWebhookBigBodiesCostNoMemory(t *testing.T) {
	const bodies, size = 24, 24 << 20
	rec := &hookRecorder{}
	addr := serveWebhooks(t, rec)
	forged := "sha256=" + strings.Repeat("ab", 32)
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 0, DisableKeepAlives: true}}
	for _, tc := range []struct {
		name    string
		sig     string
		chunked bool
		want    []int
	}{
		{"Unsigned", "", false, []int{401}},
		{"ForgedWithLength", forged, false, []int{413}},
		{"ForgedChunked", forged, true, []int{413, 503}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			rssBefore := rssKiB()
			var wg sync.WaitGroup
			codes := make(chan int, bodies)
			for range bodies {
				wg.Go(func() {
					var body io.Reader = io.LimitReader(zeros{}, size)
					if tc.chunked {
						body = onlyReader{body}
					}
					req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/", body)
					if err != nil {
						codes <- -1
						return
					}
					if !tc.chunked {
						req.ContentLength = size
					}
					req.Header.Set("X-GitHub-Event", "workflow_job")
					if tc.sig != "" {
						req.Header.Set("X-Hub-Signature-256", tc.sig)
					}
					resp, err := client.Do(req)
					if err != nil {
						// The server may close before the client sent it all.
						codes <- 0
						return
					}
					resp.Body.Close()
					codes <- resp.StatusCode
				})
			}
			wg.Wait()
			close(codes)
			runtime.ReadMemStats(&after)
			answered := 0
			for c := range codes {
				if c != 0 {
					assert.Contains(t, tc.want, c)
					answered++
				}
			}
			// Under load the client may lose every answer to the reset of a
			// connection closed with its body unread; one request on a raw
			// connection that sends no body reads the answer for certain
			// (a chunked one is only refused once it grew past the limit).
			t.Logf("%d of %d answers read by the client", answered, bodies)
			if !tc.chunked {
				assert.Contains(t, tc.want, rawAnswer(t, addr, tc.sig, size), "the server answers before reading the body")
			}
			allocated := after.TotalAlloc - before.TotalAlloc
			t.Logf("%d × %d MiB: %.1f MiB allocated in the whole process, RSS %s → %s",
				bodies, size>>20, float64(allocated)/(1<<20), rssBefore, rssKiB())
			assert.Less(t, allocated, uint64(64<<20), "bodies are not buffered")
		})
	}
	assert.Empty(t, rec.events())
}

// rawRequest opens a connection and sends a delivery's headers and the
// first part of a body promised to be longer.
func rawRequest(t *testing.T, addr string, declared int, part string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	_, err = fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: %s\r\nX-GitHub-Event: workflow_job\r\nX-GitHub-Delivery: slow\r\n"+
		"X-Hub-Signature-256: %s\r\nContent-Length: %d\r\n\r\n%s", addr, signHook([]byte("x")), declared, part)
	require.NoError(t, err)
	return c
}

// waitClosed reads c until the server closes it, and says how long it took
// (failing past limit).
func waitClosed(t *testing.T, c net.Conn, limit time.Duration) time.Duration {
	t.Helper()
	began := time.Now()
	require.NoError(t, c.SetReadDeadline(began.Add(limit)))
	_, err := io.Copy(io.Discard, c)
	require.NoError(t, err, "the server closes a slow sender's connection (read %v)", time.Since(began))
	return time.Since(began)
}

// TestWebhookSlowBodiesAreCut: 50 senders that send their headers and then
// hold their bodies are all disconnected by the read timeout, not left to
// hold a descriptor each for as long as they like.
func TestWebhookSlowBodiesAreCut(t *testing.T) {
	const readTimeout = 500 * time.Millisecond
	addr := serveWebhooks(t, &hookRecorder{}, github.WithWebhookReadTimeout(readTimeout), github.WithWebhookConcurrency(64))
	conns := make([]net.Conn, 50)
	for i := range conns {
		conns[i] = rawRequest(t, addr, 1000, `{"action":`)
	}
	var slowest time.Duration
	for _, c := range conns {
		slowest = max(slowest, waitClosed(t, c, 10*time.Second))
	}
	t.Logf("50 slow bodies cut within %v of the last one sent (read timeout %v)", slowest, readTimeout)
}

// TestWebhookConcurrencyBound: while the reading slots are held by slow
// senders, a delivery is refused with 503 at once; once they are cut, it is
// served again.
func TestWebhookConcurrencyBound(t *testing.T) {
	rec := &hookRecorder{}
	addr := serveWebhooks(t, rec, github.WithWebhookConcurrency(2), github.WithWebhookReadTimeout(30*time.Second))
	body := []byte(jobPayload)
	slow := []net.Conn{rawRequest(t, addr, 1000, "{"), rawRequest(t, addr, 1000, "{")}
	n := 0
	require.Eventually(t, func() bool {
		n++
		return postHook(t, addr, fmt.Sprintf("probe-%d", n), body, signHook(body)) == http.StatusServiceUnavailable
	}, 10*time.Second, 10*time.Millisecond, "both slots held: 503")
	for _, c := range slow {
		require.NoError(t, c.Close())
	}
	require.Eventually(t, func() bool {
		n++
		return postHook(t, addr, fmt.Sprintf("probe-%d", n), body, signHook(body)) == http.StatusOK
	}, 10*time.Second, 10*time.Millisecond, "slots freed: served again")
}

// TestWebhookReplayIsANudge: a signed body replayed under a new delivery id
// passes the signature (GitHub does not sign the id), so the handler hands
// it on like any delivery, as a nudge to look; it keeps nothing of it but
// the id, and forgets the oldest ids beyond its bound.
func TestWebhookReplayIsANudge(t *testing.T) {
	rec := &hookRecorder{}
	addr := serveWebhooks(t, rec, github.WithWebhookDeliveries(2))
	body := []byte(jobPayload)
	steps := []struct {
		delivery string
		nudged   bool
	}{
		{"d1", true},
		{"d1", false}, // GitHub's redelivery
		{"replay-1", true},
		{"replay-2", true},
		{"replay-2", false},
		{"d1", true}, // forgotten: only the last 2 ids are kept
	}
	want := 0
	for _, s := range steps {
		assert.Equal(t, http.StatusOK, postHook(t, addr, s.delivery, body, signHook(body)), s.delivery)
		if s.nudged {
			want++
		}
		got := rec.events()
		require.Len(t, got, want, s.delivery)
		if s.nudged {
			assert.Equal(t, s.delivery, got[want-1].Delivery)
			assert.EqualValues(t, 29679449, got[want-1].JobID, "the nudge names the job to look at")
		}
	}
}

// TestWebhookServerLimits checks the server's own bounds: headers larger
// than 64 KiB are refused.
func TestWebhookServerLimits(t *testing.T) {
	addr := serveWebhooks(t, &hookRecorder{})
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	_, err = fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\nX-Junk: %s\r\n\r\n", strings.Repeat("j", 256<<10))
	if err == nil {
		resp, rerr := http.ReadResponse(bufio.NewReader(c), nil)
		require.NoError(t, rerr)
		resp.Body.Close()
		assert.Equal(t, http.StatusRequestHeaderFieldsTooLarge, resp.StatusCode)
	}
}

// rawAnswer sends a delivery's headers (signature sig, Content-Length
// declared) and no body, and returns the status the server answers.
func rawAnswer(t *testing.T, addr, sig string, declared int) int {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(30*time.Second)))
	h := "POST / HTTP/1.1\r\nHost: " + addr + "\r\nX-GitHub-Event: workflow_job\r\nX-GitHub-Delivery: raw\r\n"
	if sig != "" {
		h += "X-Hub-Signature-256: " + sig + "\r\n"
	}
	_, err = fmt.Fprintf(c, "%sContent-Length: %d\r\n\r\n", h, declared)
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err)
	resp.Body.Close()
	return resp.StatusCode
}
