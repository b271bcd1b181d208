package github_test

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"testing"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/stretchr/testify/assert"

	"github.com/runner-manager/runner-manager/github"
)

func TestAppRefused(t *testing.T) {
	refused := &ghinstallation.HTTPError{Message: "received non 2xx response status", Response: &http.Response{StatusCode: 404, Status: "404 Not Found"}}
	tests := []struct {
		name   string
		err    error
		status string
		ok     bool
	}{
		{"refused", fmt.Errorf("get: %w", refused), "404 Not Found", true},
		{"server error", &ghinstallation.HTTPError{Response: &http.Response{StatusCode: 502, Status: "502 Bad Gateway"}}, "", false},
		{"no answer", &ghinstallation.HTTPError{RootCause: &net.OpError{Op: "dial", Err: errors.New("connection refused")}}, "", false},
		{"nil", nil, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, ok := github.AppRefused(tt.err)
			assert.Equal(t, tt.ok, ok)
			assert.Equal(t, tt.status, status)
		})
	}
}
