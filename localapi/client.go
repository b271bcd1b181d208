package localapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"syscall"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/status"
	"github.com/runner-manager/runner-manager/store"
)

// Client talks to the daemon of one data directory. Every method returns an
// error wrapping ErrNotRunning when no daemon listens there.
type Client struct {
	path string
	http *http.Client
}

// NewClient returns a client of the daemon serving dataDir. It connects on
// each call, so it may be made before the daemon starts.
func NewClient(dataDir string) *Client {
	path := SocketPath(dataDir)
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		},
		DisableKeepAlives: true,
	}
	return &Client{path: path, http: &http.Client{Transport: tr}}
}

// Status returns the daemon's live figures.
func (c *Client) Status(ctx context.Context) (status.Status, error) {
	var st status.Status
	resp, err := c.do(ctx, http.MethodGet, "/v1/status")
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return st, fmt.Errorf("read the daemon's status: %w", err)
	}
	return st, nil
}

// StopAttempt asks the daemon to stop one attempt's runner; an unknown
// attempt wraps store.ErrNotFound.
func (c *Client) StopAttempt(ctx context.Context, id rm.AttemptID) error {
	resp, err := c.do(ctx, http.MethodPost, "/v1/attempts/"+id.String()+"/stop")
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

// Refresh tells the daemon the policies changed in the journal.
func (c *Client) Refresh(ctx context.Context) error {
	resp, err := c.do(ctx, http.MethodPost, "/v1/refresh")
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

func (c *Client) do(ctx context.Context, method, path string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, "http://runner-manager"+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if isNotListening(err) {
			return nil, fmt.Errorf("%w (no one listens on %s): start it with `runner-manager run`", ErrNotRunning, c.path)
		}
		return nil, fmt.Errorf("reach the daemon on %s: %w", c.path, err)
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	var body errorBody
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if json.Unmarshal(b, &body) != nil || body.Error == "" {
		body.Error = resp.Status
	}
	switch resp.StatusCode {
	case http.StatusNotFound:
		return nil, &remoteError{msg: body.Error, kind: store.ErrNotFound}
	case http.StatusBadRequest:
		return nil, &remoteError{msg: body.Error, kind: rm.ErrInvalid}
	}
	return nil, fmt.Errorf("the daemon answered %s: %s", resp.Status, body.Error)
}

// remoteError is the daemon's own message, matching the error it stood for
// there (store.ErrNotFound, runnermanager.ErrInvalid) with errors.Is.
type remoteError struct {
	msg  string
	kind error
}

func (e *remoteError) Error() string { return e.msg }
func (e *remoteError) Unwrap() error { return e.kind }

func isNotListening(err error) bool {
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) {
		return true
	}
	// Windows reports a missing or dead socket with its own WSA codes.
	var op *net.OpError
	return runtime.GOOS == "windows" && errors.As(err, &op) && op.Op == "dial"
}
