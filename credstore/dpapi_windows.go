package credstore

import (
	"unsafe"

	"golang.org/x/sys/windows"
)

// NewDPAPI is the Windows store: files in dir encrypted with DPAPI in the
// current account's scope (CryptProtectData without
// CRYPTPROTECT_LOCAL_MACHINE), so only that account decrypts them.
func NewDPAPI(dir string) Protected {
	return Protected{Dir: dir, Protect: dpapiProtect, Unprotect: dpapiUnprotect}
}

func blob(b []byte) *windows.DataBlob {
	if len(b) == 0 {
		return &windows.DataBlob{}
	}
	return &windows.DataBlob{Size: uint32(len(b)), Data: &b[0]}
}

func dpapiProtect(secret, entropy []byte) ([]byte, error) {
	var out windows.DataBlob
	name, _ := windows.UTF16PtrFromString("runner-manager")
	if err := windows.CryptProtectData(blob(secret), name, blob(entropy), 0, nil, windows.CRYPTPROTECT_UI_FORBIDDEN, &out); err != nil {
		return nil, err
	}
	return takeBlob(&out), nil
}

func dpapiUnprotect(data, entropy []byte) ([]byte, error) {
	var out windows.DataBlob
	if err := windows.CryptUnprotectData(blob(data), nil, blob(entropy), 0, nil, windows.CRYPTPROTECT_UI_FORBIDDEN, &out); err != nil {
		return nil, err
	}
	return takeBlob(&out), nil
}

// takeBlob copies what DPAPI allocated and frees it (LocalFree).
func takeBlob(b *windows.DataBlob) []byte {
	if b.Data == nil {
		return nil
	}
	out := make([]byte, b.Size)
	copy(out, unsafe.Slice(b.Data, b.Size))
	_, _ = windows.LocalFree(windows.Handle(unsafe.Pointer(b.Data)))
	return out
}
