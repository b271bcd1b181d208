// Package native owns the native backend: Launcher runs each attempt's
// runner as a process of this host in a root directory of its own, and
// contains its processes (a cgroup per attempt on Linux, see
// platform.Cgroups; else the process group and an environment marker). It
// implements the root's launcher contract (rm.Launcher, rm.MemoryContainer,
// rm.RootLister) and takes the host parts it shares with others (process
// identity, cgroups, installed runners, kept logs) from package platform.
// Kind is the backend as the rest of the manager knows it: the default,
// with no settings of its own.
package native
