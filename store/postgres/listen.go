package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/runner-manager/runner-manager/store"
)

// listenProbe is how long a listener waits for a notice before it asks
// the server whether it is still there (a ping): a network cut sends
// nothing, and TCP's keepalive would take minutes to tell. An idle
// listener costs two round trips a minute.
var listenProbe = 30 * time.Second

// probeTimeout bounds the ping: a server that does not answer in it is
// lost.
const probeTimeout = 10 * time.Second

// ListenFleet implements store.FleetSets on a connection of its own,
// taken from the pool (with its settings) and never given back: it is
// closed when the listener ends, so no connection goes back to the pool
// still listening. Store.Close ends every listener first.
func (s *Store) ListenFleet(ctx context.Context) (<-chan store.FleetNotice, error) {
	ctx, stop := context.WithCancel(ctx)
	id, ok := s.addListener(stop)
	if !ok {
		stop()
		return nil, fmt.Errorf("listen for fleet notices in %s: the store is closed", s.where)
	}
	pc, err := s.pool.Acquire(ctx)
	if err != nil {
		s.removeListener(id)
		return nil, fmt.Errorf("listen for fleet notices in %s: %w", s.where, err)
	}
	conn := pc.Hijack()
	if _, err := conn.Exec(ctx, `LISTEN `+fleetChannel); err != nil {
		closeConn(conn)
		s.removeListener(id)
		return nil, fmt.Errorf("listen for fleet notices in %s: %w", s.where, err)
	}
	ch := make(chan store.FleetNotice, 16)
	go func() {
		defer s.removeListener(id)
		defer close(ch)
		defer closeConn(conn)
		for {
			wait, cancel := context.WithTimeout(ctx, s.probe)
			n, err := conn.WaitForNotification(wait)
			cancel()
			switch {
			case ctx.Err() != nil:
				return
			case err != nil && wait.Err() != nil && !conn.IsClosed():
				// Nothing for a while: is the server still there?
				probe, cancel := context.WithTimeout(ctx, probeTimeout)
				err = conn.Ping(probe)
				cancel()
				if err != nil {
					return
				}
				continue
			case err != nil:
				return // the connection failed
			}
			notice, ok := parseNotice(n.Payload)
			if !ok {
				continue // another program's (a newer one's) notice
			}
			select {
			case ch <- notice:
			case <-ctx.Done():
				return
			}
		}
	}()
	return ch, nil
}

// closeConn closes a listener's connection (the server forgets its
// LISTEN with it), waiting a little for a server that is gone.
func closeConn(conn *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = conn.Close(ctx)
}

// addListener counts a listener Close must end, with the function that
// ends it; false once the store is closed.
func (s *Store) addListener(stop context.CancelFunc) (id int, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, false
	}
	if s.listeners == nil {
		s.listeners = make(map[int]context.CancelFunc)
	}
	s.nextListener++
	s.listeners[s.nextListener] = stop
	s.listening.Add(1)
	return s.nextListener, true
}

// removeListener forgets an ended listener.
func (s *Store) removeListener(id int) {
	s.mu.Lock()
	stop := s.listeners[id]
	delete(s.listeners, id)
	s.mu.Unlock()
	stop()
	s.listening.Done()
}

// endListeners ends every listener and waits for them: their
// connections are outside the pool, so the pool's Close would not.
func (s *Store) endListeners() {
	s.mu.Lock()
	s.closed = true
	for _, stop := range s.listeners {
		stop()
	}
	s.mu.Unlock()
	s.listening.Wait()
}
