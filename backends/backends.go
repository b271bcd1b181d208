// Package backends is the one list of the backends a host knows: what
// makes or loads policies checks them against it (rm.Policy.ValidateWith),
// so that nothing else names a backend. A new backend is a package of
// its own and a line here.
package backends

import (
	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/backend/container"
	"github.com/runner-manager/runner-manager/backend/native"
	"github.com/runner-manager/runner-manager/backend/vm"
)

// All are the backends, the default (native) first: the order errors
// list them in.
func All() []rm.BackendKind {
	return []rm.BackendKind{native.Kind, container.Kind, vm.Kind}
}
