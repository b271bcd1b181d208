// Package platform owns what the manager asks of the operating system and
// what several backends and the daemon share of it: process tables and
// trees (a direct /proc reader on Linux, gopsutil elsewhere), process
// identity (pid + start time), host memory, disk and CPU (Machine, the
// root's rm.Machine), runner processes left by a crash, control groups
// (Cgroups) and reading a log's tail. The data directory (its paths, lock,
// kept logs and peaks file) is package datadir's; the runner package's
// files and their life are runnerpkg's. The launchers live beside it,
// one package each: backend/native, backend/container and backend/vm.
package platform
