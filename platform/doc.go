// Package platform owns what the manager asks of the operating system and
// what several backends and the daemon share of it: process tables and
// trees (a direct /proc reader on Linux, gopsutil elsewhere), process
// identity (pid + start time), host memory, disk and CPU (Machine, the
// root's rm.Machine), runner processes left by a crash, control groups
// (Cgroups), the kept logs of ended attempts and reading a log's tail,
// the data directory's lock, and the memory peaks file. The launchers
// live beside it, one package each: backend/native, backend/container
// and backend/vm; the runner package's files and their life are
// runnerpkg's.
package platform
