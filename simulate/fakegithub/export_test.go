package fakegithub

import "time"

// Advance moves the fake's clock forward by d for what time alone decides
// (session lapses, token lifetimes, requeues) and runs the janitor's pass
// once, so a test sees "an hour later" without waiting an hour.
func (s *Server) Advance(d time.Duration) {
	s.skew.Add(int64(d))
	s.tick()
}
