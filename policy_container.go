package runnermanager

// ContainerSettings are a container policy's own: what each attempt's
// container runs and may use. Its memory limit is the policy's
// MemoryLimit. The journal keeps them in columns of their own; their rules
// are the container backend's (its BackendKind), and its launcher checks
// them again, with the engine's rules, when it is built.
type ContainerSettings struct {
	// Image is the image reference holding the runner (see
	// docs/containers.md for the contract it meets).
	Image string
	// CPUs limits the container's CPU time, in CPUs (1.5: one and a half);
	// 0: no limit.
	CPUs float64
	// Network is the engine network the container joins ("host", "none",
	// "bridge" or a network's name); "" is the engine's default.
	Network string
	// Env names variables of the manager's environment passed to every
	// container (a trailing "*" makes a name a prefix). Jobs read them.
	Env []string
	// Volumes are mounted in every container, "source:target[:ro|rw]":
	// source an absolute host path or a volume name. For caches.
	Volumes []string
}

// IsZero reports whether no container setting is set.
func (c ContainerSettings) IsZero() bool {
	return c.Image == "" && c.CPUs == 0 && c.Network == "" && len(c.Env) == 0 && len(c.Volumes) == 0
}

// RunnerInImage reports whether p's runner comes in its image (a container
// policy's: its Image holds an installed runner) rather than from the
// host's installed runners (RunnerDir, else the newest installed): such a
// policy needs no runner installed, and its attempts' processes live in
// the engine's containers.
func (p Policy) RunnerInImage() bool { return p.Container.Image != "" }
