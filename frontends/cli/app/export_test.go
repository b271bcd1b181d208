package app

// SetExecutable makes service install see path as this program.
func SetExecutable(path string) func() {
	old := osExecutable
	osExecutable = func() (string, error) { return path, nil }
	return func() { osExecutable = old }
}
