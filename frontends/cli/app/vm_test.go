package app_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/backend/vm"
	"github.com/runner-manager/runner-manager/backend/vm/vmtest"
)

// vm image build makes an image a policy takes, saying each step.
func TestVMImageBuild(t *testing.T) {
	kernel := vmtest.Kernel(t)
	e := newEnv(t)
	root := filepath.Join(t.TempDir(), "rootfs")
	require.NoError(t, vmtest.BusyboxRoot(root))
	runner := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(runner, "bin"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(runner, "bin", "Runner.Listener"), []byte("#!/bin/sh\n"), 0o755))
	out := filepath.Join(t.TempDir(), "image")

	stdout := e.ok("vm", "image", "build", out, "--rootfs", root, "--kernel", kernel, "--runner", runner)
	assert.Contains(t, stdout, "initramfs (busybox, init, ")
	assert.Contains(t, stdout, "built VM image "+out)
	_, err := vm.OpenImage(out)
	require.NoError(t, err)
	e.ok("policy", "add", "forks", "--repo", "octo/app", "--scale-set", "forks", "--backend", "vm", "--image", out)
}
