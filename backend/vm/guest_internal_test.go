package vm

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
)

// The runner's environment file, read by a real shell as the guest's init
// reads it, gives back every value as it was, the launcher's own
// variables winning over the spec's.
func TestGuestEnvReadByShell(t *testing.T) {
	// The guest's shell is busybox's; sh where there is none.
	shell := []string{"busybox", "sh"}
	if _, err := exec.LookPath("busybox"); err != nil {
		shell = []string{"sh"}
	}
	envProg, err := exec.LookPath("env")
	if err != nil {
		t.Skip("no env program")
	}
	a := rm.NewAttemptID()
	spec := rm.LaunchSpec{Attempt: a, JITConfig: "eyJ'quoted\"$(touch /tmp/pwned)`x`\nline2",
		Env: []string{"A=it's", "B=$HOME and `cmd`", "RUNNER_ALLOW_RUNASROOT=0", "BAD-NAME=x", "PATH=/opt/bin"}}
	env, dropped := guestEnv(spec)
	require.Equal(t, []string{"BAD-NAME"}, dropped)
	f := filepath.Join(t.TempDir(), "env")
	require.NoError(t, os.WriteFile(f, env, 0o600))
	args := append(shell[1:], "-c", `set -a; . "$1"; set +a; "$2" -0`, "sh", f, envProg)
	out, err := exec.Command(shell[0], args...).Output()
	require.NoError(t, err)
	got := map[string]string{}
	for _, kv := range strings.Split(string(out), "\x00") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			got[k] = v
		}
	}
	require.Equal(t, spec.JITConfig, got["ACTIONS_RUNNER_INPUT_JITCONFIG"])
	require.Equal(t, "it's", got["A"])
	require.Equal(t, "$HOME and `cmd`", got["B"])
	require.Equal(t, "1", got["RUNNER_ALLOW_RUNASROOT"])
	require.Equal(t, "1", got["ACTIONS_RUNNER_RETURN_VERSION_DEPRECATED_EXIT_CODE"])
	require.Equal(t, a.String(), got[AttemptEnv])
	require.Equal(t, "/opt/bin", got["PATH"], "a policy may set the guest's PATH")
	require.Equal(t, "/root", got["HOME"])
}

func TestPlanNet(t *testing.T) {
	fws, err := parseForwards([]string{"127.0.0.1:8080", "api.github.com:443", "API.github.com:443", "api.github.com:80", "192.168.1.5:9000"})
	require.NoError(t, err)
	n, err := planNet(fws)
	require.NoError(t, err)
	var rules []string
	for _, g := range n.guestfwd {
		rules = append(rules, g.rule("/bin/busybox nc"))
	}
	require.Equal(t, []string{
		"tcp:10.0.2.100:8080-cmd:/bin/busybox nc 127.0.0.1 8080",
		"tcp:10.0.2.101:443-cmd:/bin/busybox nc api.github.com 443",
		"tcp:10.0.2.101:80-cmd:/bin/busybox nc api.github.com 80",
		"tcp:10.0.2.102:9000-cmd:/bin/busybox nc 192.168.1.5 9000",
	}, rules)
	require.Equal(t, []string{"127.0.0.1 8080 10.0.2.100", "192.168.1.5 9000 10.0.2.102"}, n.relays)
	require.Equal(t, []string{"10.0.2.101 api.github.com"}, n.hosts)

	fws, err = parseForwards([]string{"127.0.0.1:8080", "127.0.0.2:8080"})
	require.NoError(t, err)
	_, err = planNet(fws)
	require.ErrorContains(t, err, "one port serves one IP")
}

// A policy's forwards reach its own guests, beside the host's and the
// runner's services, and those of no other policy; QEMU's network is
// made of them all.
func TestGuestForwardsOfPolicy(t *testing.T) {
	b64 := func(v any) string {
		b, err := json.Marshal(v)
		require.NoError(t, err)
		return base64.StdEncoding.EncodeToString(b)
	}
	jit := b64(map[string]string{".runner": b64(map[string]string{"gitHubUrl": "https://github.com/octo-org/app"})})
	host := []string{"127.0.0.1:9100"}
	open := rm.LaunchSpec{Attempt: rm.NewAttemptID(), JITConfig: jit, Policy: rm.Policy{Name: "forks",
		VM: rm.VMSettings{Image: "/i", Forward: []string{"cache.lan:8080", "192.168.1.5:5000", "127.0.0.1:9100"}}}}
	fws, err := guestForwards(host, open)
	require.NoError(t, err)
	n, err := planNet(fws)
	require.NoError(t, err)
	var rules []string
	for _, g := range n.guestfwd {
		rules = append(rules, g.rule("/bin/busybox nc"))
	}
	require.Equal(t, []string{
		"tcp:10.0.2.100:9100-cmd:/bin/busybox nc 127.0.0.1 9100",
		"tcp:10.0.2.101:8080-cmd:/bin/busybox nc cache.lan 8080",
		"tcp:10.0.2.102:5000-cmd:/bin/busybox nc 192.168.1.5 5000",
		"tcp:10.0.2.103:443-cmd:/bin/busybox nc github.com 443",
	}, rules, "the host's, the policy's (a host's service named again once), the runner's")
	q := qemuArgs{s: Settings{Accel: AccelTCG}.withDefaults(), dir: "/d", net: n, nc: "/bin/busybox nc"}
	require.Contains(t, strings.Join(q.argv(), " "), ",guestfwd=tcp:10.0.2.101:8080-cmd:/bin/busybox nc cache.lan 8080,")

	closed := open
	closed.Policy = rm.Policy{Name: "home", VM: rm.VMSettings{Image: "/i"}}
	fws, err = guestForwards(host, closed)
	require.NoError(t, err)
	require.Equal(t, []forward{{host: "127.0.0.1", port: 9100, ip: true}, {host: "github.com", port: 443}}, fws,
		"another policy's guests reach the host's and the runner's services only")

	bad := open
	bad.Policy.VM.Forward = []string{"cache.lan"}
	_, err = guestForwards(host, bad)
	require.ErrorContains(t, err, `policy "forks": forward "cache.lan": want host:port`)
}

func TestSettingsValidate(t *testing.T) {
	for _, tc := range []struct {
		s    Settings
		want string
	}{
		{Settings{Image: "x", MemoryMiB: 64}, "at least 128 MiB"},
		{Settings{Image: "x", Accel: "hvf"}, `accel "hvf"`},
		{Settings{Image: "x", Network: "bridge"}, `network "bridge"`},
		{Settings{Image: "x", Forward: []string{"[::1]:80"}}, "IPv6"},
		{Settings{Image: "x", Forward: []string{"10.0.2.2:80"}}, "guest's own network"},
		{Settings{Image: "x", Forward: []string{"a,b:80"}}, "neither an IPv4 address nor a host name"},
		{Settings{Image: "x", Forward: []string{"host:0"}}, "not 1-65535"},
		{Settings{Image: "x", SlotDiskBytes: 1 << 20}, "slot disk"},
	} {
		err := tc.s.Validate()
		require.ErrorContains(t, err, tc.want, "%+v", tc.s)
	}
	require.NoError(t, Settings{Image: "x", Forward: []string{"127.0.0.1:1", "github.com:443"}}.Validate())
}

func TestReadConsole(t *testing.T) {
	f := filepath.Join(t.TempDir(), "console.log")
	log := "[ 0.8] PCI: Fatal\r\nrunner-manager-guest: phase init 1.90\r\n" +
		"a job printing runner-manager-guest: exit 7\r\n" +
		"[ 3.1] Out of memory: Killed process 93 (Runner.Listener) total-vm:512000kB\r\n" +
		"runner-manager-guest: phase listener 2.40\r\nrunner-manager-guest: ran-job\r\nrunner-manager-guest: exit 3\r\n"
	require.NoError(t, os.WriteFile(f, []byte(log), 0o600))
	c, err := ReadConsole(f)
	require.NoError(t, err)
	require.Equal(t, 3, c.ExitCode, "the init's last word wins")
	require.True(t, c.RanJob)
	require.Equal(t, 1, c.OOMKills)
	require.Equal(t, []Phase{{"init", 1.90}, {"listener", 2.40}}, c.Phases)

	require.NoError(t, os.WriteFile(f, []byte("runner-manager-guest: error no fw_cfg\r\n"), 0o600))
	c, err = ReadConsole(f)
	require.NoError(t, err)
	require.Equal(t, -1, c.ExitCode)
	require.Equal(t, "no fw_cfg", c.Error)
}

// QEMU's command line names no secret and carries the attempt's
// directory, by which Adopt knows its QEMU.
func TestQEMUArgs(t *testing.T) {
	dir := "/data/vm/att"
	q := qemuArgs{s: Settings{Accel: AccelTCG}.withDefaults(), im: Image{Kernel: "/i/vmlinuz", Initrd: "/i/initrd.img"},
		dir: dir, disk: dir + "/disk.qcow2", config: dir + "/config", console: dir + "/console.log",
		net: guestNet{guestfwd: []guestfwd{{guest: "10.0.2.100", host: "127.0.0.1", port: 80}}}, nc: "/bin/busybox nc"}
	args := q.argv()
	require.Contains(t, args, "file:"+dir+"/console.log")
	require.Contains(t, args, "user,id=n0,restrict=on,guestfwd=tcp:10.0.2.100:80-cmd:/bin/busybox nc 127.0.0.1 80")
	require.Contains(t, args, "name=opt/runner-manager/env,file=/dev/fd/3")
	require.NotContains(t, strings.Join(args, " "), slotSerial, "a cold attempt has no slot disk")
	q.slot = "/data/slots/octo/app/1/disk.img"
	require.Contains(t, q.argv(), "id=d1,file=/data/slots/octo/app/1/disk.img,format=raw,if=none,discard=unmap")
	require.Contains(t, q.argv(), "virtio-blk-device,drive=d1,serial=rm-slot")
	q.slot = ""
	i := slices.Index(args, "-accel")
	require.Equal(t, "tcg", args[i+1])
	q.s.Network = NetworkOpen
	require.Contains(t, q.argv(), "user,id=n0,guestfwd=tcp:10.0.2.100:80-cmd:/bin/busybox nc 127.0.0.1 80")
}

// A warm guest's runner gets the cache variables, with the guest's work
// folder, but for those the attempt sets itself.
func TestGuestEnvWarm(t *testing.T) {
	spec := rm.LaunchSpec{Attempt: rm.NewAttemptID(), JITConfig: "x", Env: []string{"GOCACHE=/mine"}}
	cold, _ := guestEnv(spec)
	require.NotContains(t, string(cold), "npm_config_cache")
	spec.Warm = &rm.WarmSlot{Repo: "octo/app", N: 1, Dir: "/data/slots/x"}
	env, _ := guestEnv(spec)
	require.Contains(t, string(env), "npm_config_cache='/runner/_work/_caches/npm'\n")
	require.Contains(t, string(env), "GOCACHE='/mine'\n")
	require.NotContains(t, string(env), "_caches/go-build")
	require.Contains(t, string(guestConfig(spec.Attempt, guestNet{}, true)), "RM_WORK='/runner/_work'\n")
	require.NotContains(t, string(guestConfig(spec.Attempt, guestNet{}, false)), "RM_SLOT")
}
