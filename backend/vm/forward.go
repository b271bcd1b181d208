package vm

import (
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
)

var forwardHost = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$`)

// ParseForward parses a host service a VM guest may reach, "host:port"
// with an IPv4 address or a host name: one of the host's [vm] forward or
// of a policy's rm.VMSettings.Forward: the rules the launcher's guests
// are given (QEMU's user network) and a policy is checked by (Kind).
func ParseForward(s string) (host string, port int, ip bool, err error) {
	host, p, err := net.SplitHostPort(s)
	if err != nil {
		return "", 0, false, fmt.Errorf("forward %q: want host:port: %w", s, err)
	}
	port, err = strconv.Atoi(p)
	if err != nil || port < 1 || port > 65535 {
		return "", 0, false, fmt.Errorf("forward %q: port %q is not 1-65535", s, p)
	}
	if a := net.ParseIP(host); a != nil {
		if a.To4() == nil {
			return "", 0, false, fmt.Errorf("forward %q: IPv6 is not supported (the guest's network is QEMU's IPv4 user network)", s)
		}
		if strings.HasPrefix(host, "10.0.2.") {
			return "", 0, false, fmt.Errorf("forward %q: 10.0.2.0/24 is the guest's own network", s)
		}
		return host, port, true, nil
	}
	if !forwardHost.MatchString(host) {
		return "", 0, false, fmt.Errorf("forward %q: %q is neither an IPv4 address nor a host name", s, host)
	}
	return host, port, false, nil
}
