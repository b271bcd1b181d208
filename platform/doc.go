// Package platform owns what the manager asks of the operating system:
// process tables and trees (a direct /proc reader on Linux, gopsutil
// elsewhere), process identity (pid + start time), host memory and disk, the
// native runner launcher with its containment of each attempt's processes
// (a cgroup per attempt on Linux, see Cgroups; else the process group and
// an environment marker), runner installation, and the memory peaks file.
package platform
