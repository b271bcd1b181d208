package fakegithub

import (
	"net"
	"net/http"
	"sync"
)

// loopback is the fake's HTTP server on 127.0.0.1: what the fake needs of
// net/http/httptest's server (a URL, dropping every open connection at
// once for outages) without linking test code into the programs that ship
// the fake (the demo).
type loopback struct {
	URL      string
	Listener net.Listener
	Config   *http.Server

	mu    sync.Mutex
	conns map[net.Conn]bool
	wg    sync.WaitGroup
}

func newLoopback(h http.Handler) *loopback {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		if l, err = net.Listen("tcp6", "[::1]:0"); err != nil {
			panic("fakegithub: no loopback port to listen on: " + err.Error())
		}
	}
	s := &loopback{URL: "http://" + l.Addr().String(), Listener: l, conns: map[net.Conn]bool{}}
	s.Config = &http.Server{Handler: h, ConnState: s.track}
	s.wg.Go(func() { _ = s.Config.Serve(l) })
	return s
}

func (s *loopback) track(c net.Conn, st http.ConnState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch st {
	case http.StateNew:
		s.conns[c] = true
	case http.StateClosed, http.StateHijacked:
		delete(s.conns, c)
	}
}

// CloseClientConnections drops every open connection, long polls included.
func (s *loopback) CloseClientConnections() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		_ = c.Close()
		delete(s.conns, c)
	}
}

// Close stops serving and waits for the first serve loop to return.
func (s *loopback) Close() {
	_ = s.Config.Close()
	s.CloseClientConnections()
	s.wg.Wait()
}

// Client is a plain HTTP client with its own connection pool, so closing
// the server's connections is not undone by a shared pool.
func (s *loopback) Client() *http.Client {
	return &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 64}}
}
