package vm

import (
	"fmt"
	"path/filepath"
	"strings"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/configfile"
)

// Kind is the vm backend as the rest of the manager knows it: the rules
// of a policy's rm.VMSettings (an image directory, forwards by
// ParseForward).
type Kind struct{}

// Name is rm.BackendVM.
func (Kind) Name() rm.Backend { return rm.BackendVM }

// SettingsIn names a policy's VM settings by its image, else its
// forwards.
func (Kind) SettingsIn(p rm.Policy) string {
	if p.VM.IsZero() {
		return ""
	}
	if p.VM.Image == "" {
		return fmt.Sprintf("VM settings (forward %q)", strings.Join(p.VM.Forward, ","))
	}
	return fmt.Sprintf("VM settings (image %q)", p.VM.Image)
}

// ValidatePolicy checks p's VM settings: a clean absolute image
// directory, forwards by ParseForward.
func (Kind) ValidatePolicy(p rm.Policy) error {
	v := p.VM
	if v.Image == "" {
		return fmt.Errorf("backend %q needs an image: the directory `runner-manager vm image build` made", rm.BackendVM)
	}
	if !filepath.IsAbs(v.Image) || filepath.Clean(v.Image) != v.Image {
		return fmt.Errorf("VM image %q: want a clean absolute path", v.Image)
	}
	for _, f := range v.Forward {
		if _, _, _, err := ParseForward(f); err != nil {
			return fmt.Errorf("VM %w", err)
		}
	}
	return nil
}

// FromUser takes the image as the policy's image directory: "~"
// expanded, made absolute, and holding an image (OpenImage).
func (Kind) FromUser(u rm.UserSettings) (rm.ContainerSettings, rm.VMSettings, error) {
	box, fwd := u.AsWritten()
	if u.Image == "" {
		return box, fwd, nil
	}
	box.Image = ""
	dir, err := configfile.ExpandTilde(u.Image, nil)
	if err != nil {
		return box, rm.VMSettings{}, fmt.Errorf("VM image: %v", err)
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return box, rm.VMSettings{}, fmt.Errorf("VM image %q: %v", u.Image, err)
	}
	if _, err := OpenImage(dir); err != nil {
		return box, rm.VMSettings{}, err
	}
	return box, rm.VMSettings{Image: dir, Forward: fwd.Forward}, nil
}
