package service

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/svc"
	"golang.org/x/sys/windows/svc/mgr"
)

// IsWindowsService tells whether the SCM started this process.
func IsWindowsService() (bool, error) { return svc.IsWindowsService() }

// RunWindows serves run to the SCM under name until it stops (Serve).
func RunWindows(name string, run func(context.Context) error) error {
	h := &handler{run: run}
	if err := svc.Run(name, h); err != nil {
		return err
	}
	return h.err
}

type handler struct {
	run func(context.Context) error
	err error
}

func (h *handler) Execute(args []string, r <-chan svc.ChangeRequest, s chan<- svc.Status) (bool, uint32) {
	controls := make(chan Control)
	stop := make(chan struct{})
	defer close(stop)
	var last svc.Status
	go func() {
		for {
			select {
			case <-stop:
				return
			case req := <-r:
				var c Control
				switch req.Cmd {
				case svc.Stop:
					c = ControlStop
				case svc.Shutdown:
					c = ControlShutdown
				case svc.Interrogate:
					c = ControlInterrogate
				default:
					continue
				}
				select {
				case controls <- c:
				case <-stop:
					return
				}
			}
		}
	}()
	report := func(st State) {
		switch st {
		case Starting:
			last = svc.Status{State: svc.StartPending}
		case Running:
			last = svc.Status{State: svc.Running, Accepts: svc.AcceptStop | svc.AcceptShutdown}
		case Stopping:
			last = svc.Status{State: svc.StopPending, WaitHint: uint32((30 * time.Second).Milliseconds())}
		case Stopped:
			last = svc.Status{State: svc.Stopped}
		}
		s <- last
	}
	h.err = Serve(context.Background(), h.run, controls, report)
	if h.err != nil {
		return true, 1 // a failure: the recovery actions restart it
	}
	return false, 0
}

// InstallWindows creates the service under name running exe with
// WindowsArgs(spec), started at boot as LocalSystem, restarted by the SCM
// 5 s after a failure; it makes the data directory with SecureDir's ACL.
func InstallWindows(name string, spec Spec) error {
	if err := SecureDir(spec.DataDir); err != nil {
		return err
	}
	m, err := mgr.Connect()
	if err != nil {
		return fmt.Errorf("connect to the Service Control Manager (run as an administrator): %w", err)
	}
	defer m.Disconnect()
	if s, err := m.OpenService(name); err == nil {
		s.Close()
		return fmt.Errorf("the service %s exists already: runner-manager service uninstall first", name)
	}
	s, err := m.CreateService(name, spec.Executable, mgr.Config{
		DisplayName: "runner-manager",
		Description: "Ephemeral GitHub Actions runners, one per job.",
		StartType:   mgr.StartAutomatic,
	}, WindowsArgs(spec)...)
	if err != nil {
		return fmt.Errorf("create the service %s: %w", name, err)
	}
	defer s.Close()
	if err := s.SetRecoveryActions([]mgr.RecoveryAction{
		{Type: mgr.ServiceRestart, Delay: 5 * time.Second},
		{Type: mgr.ServiceRestart, Delay: 5 * time.Second},
		{Type: mgr.ServiceRestart, Delay: 30 * time.Second},
	}, 24*60*60); err != nil {
		return fmt.Errorf("set the service's restarts: %w", err)
	}
	return s.Start()
}

// RemoveWindows stops and deletes the service name.
func RemoveWindows(name string) error {
	m, err := mgr.Connect()
	if err != nil {
		return fmt.Errorf("connect to the Service Control Manager (run as an administrator): %w", err)
	}
	defer m.Disconnect()
	s, err := m.OpenService(name)
	if err != nil {
		return fmt.Errorf("open the service %s: %w", name, err)
	}
	defer s.Close()
	_, _ = s.Control(svc.Stop)
	return s.Delete()
}

// QueryWindows is the SCM's word on the service name.
func QueryWindows(name string) (Status, error) {
	m, err := mgr.Connect()
	if err != nil {
		return Status{}, fmt.Errorf("connect to the Service Control Manager: %w", err)
	}
	defer m.Disconnect()
	s, err := m.OpenService(name)
	if errors.Is(err, windows.ERROR_SERVICE_DOES_NOT_EXIST) {
		return Status{State: NotInstalled, Restarts: -1}, nil
	} else if err != nil {
		return Status{}, err
	}
	defer s.Close()
	q, err := s.Query()
	if err != nil {
		return Status{}, err
	}
	cfg, err := s.Config()
	if err != nil {
		return Status{}, err
	}
	st := Status{State: WindowsState(uint32(q.State)), StartMode: WindowsStartMode(cfg.StartType),
		Program: WindowsProgram(cfg.BinaryPathName), PID: int(q.ProcessId), Restarts: -1}
	if q.Win32ExitCode != 0 && q.Win32ExitCode != uint32(windows.ERROR_SERVICE_SPECIFIC_ERROR) {
		st.LastExit = fmt.Sprintf("exit code %d", q.Win32ExitCode)
	} else if q.ServiceSpecificExitCode != 0 {
		st.LastExit = fmt.Sprintf("exit status %d", q.ServiceSpecificExitCode)
	}
	if st.State == Stopped && st.LastExit != "" {
		st.State = Failed
	}
	return st, nil
}

// SecureDir makes dir (and its parents) and gives it WindowsDirSDDL's
// ACL: a runner's work directory holds its job's secrets while it runs.
func SecureDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	sd, err := windows.SecurityDescriptorFromString(WindowsDirSDDL)
	if err != nil {
		return err
	}
	dacl, _, err := sd.DACL()
	if err != nil {
		return err
	}
	if err := windows.SetNamedSecurityInfo(dir, windows.SE_FILE_OBJECT,
		windows.DACL_SECURITY_INFORMATION|windows.PROTECTED_DACL_SECURITY_INFORMATION, nil, nil, dacl, nil); err != nil {
		return fmt.Errorf("set the ACL of %s: %w", dir, err)
	}
	return nil
}
