//go:build !linux

package platform

import (
	"strconv"

	"github.com/shirou/gopsutil/v4/host"
)

// bootID is the boot time, in unix seconds: it changes at each boot.
func bootID() (string, error) {
	t, err := host.BootTime()
	if err != nil {
		return "", err
	}
	return "boot-" + strconv.FormatUint(t, 10), nil
}
