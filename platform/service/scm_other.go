//go:build !windows

package service

import "context"

// IsWindowsService: only on Windows.
func IsWindowsService() (bool, error) { return false, nil }

// RunWindows: only on Windows.
func RunWindows(name string, run func(context.Context) error) error { return errWindowsOnly }

// InstallWindows: only on Windows.
func InstallWindows(name string, spec Spec) error { return errWindowsOnly }

// RemoveWindows: only on Windows.
func RemoveWindows(name string) error { return errWindowsOnly }

// QueryWindows: only on Windows.
func QueryWindows(name string) (Status, error) { return Status{}, errWindowsOnly }

// SecureDir: only on Windows (elsewhere the data directory is 0700).
func SecureDir(dir string) error { return errWindowsOnly }
