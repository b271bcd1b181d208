package reconcile

import (
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/github"
)

// Status is a snapshot of a supervisor's live figures, for `status`, the TUI
// and metrics. It is plain data and marshals to JSON.
type Status struct {
	At       time.Time
	Host     rm.Host
	Memory   MemoryStatus
	Policies []PolicyStatus
	Attempts []AttemptStatus
	// Budget is the GitHub REST budget as last seen.
	Budget github.Budget
	// Refusals counts admission refusals by reason since start.
	Refusals map[string]int
}

// MemoryStatus is the host's memory as admission sees it.
type MemoryStatus struct {
	TotalBytes     uint64
	AvailableBytes uint64
	ReserveBytes   uint64
	// CommittedBytes is Σ over live attempts of max(current RSS, expected peak).
	CommittedBytes uint64
	// DiskFreeBytes and DiskFloorBytes of the data directory's filesystem.
	DiskFreeBytes  uint64
	DiskFloorBytes uint64
}

// PolicyStatus is one policy's figures.
type PolicyStatus struct {
	ID      rm.PolicyID
	Name    string
	Target  string
	Mode    string
	Paused  bool
	Live    int
	Idle    int
	Busy    int
	MinIdle int
	Max     int
	// Demand is what GitHub last said the target wants.
	Demand int
	// Admitted is the capacity admission allows now (≤ Max): what
	// scale-set mode reports as maxCapacity.
	Admitted int
	// ExpectedPeakBytes is what admission expects a new attempt to peak at.
	ExpectedPeakBytes uint64
	LastRefusal       string
	LastError         string

	// Spares are the warm spares live now (idle runners beyond the jobs),
	// SpareTarget how many the loop keeps, Boot the measured boot of the
	// policy's runners (launch → listening; 0 until measured).
	Spares, SpareTarget int
	Boot                time.Duration
}

// AttemptStatus is one live (or just ended) attempt's figures.
type AttemptStatus struct {
	ID            rm.AttemptID
	Policy        rm.PolicyID
	RunnerName    string
	State         rm.AttemptState
	Job           string
	CreatedAt     time.Time
	RSSBytes      uint64
	PeakRSSBytes  uint64
	CPUMillicores uint32
	// LastMessage is what the manager last noted on it ("stopping: zombie",
	// "exited; waiting for GitHub's word on its job").
	LastMessage string
}
