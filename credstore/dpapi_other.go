//go:build !windows

package credstore

// NewDPAPI is the Windows store; elsewhere its files can be listed and
// removed but not encrypted or decrypted.
func NewDPAPI(dir string) Protected {
	no := func([]byte, []byte) ([]byte, error) { return nil, errNoDPAPI }
	return Protected{Dir: dir, Protect: no, Unprotect: no}
}
