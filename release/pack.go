package release

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	rm "github.com/runner-manager/runner-manager"
)

// Pack writes p's archive of the files at paths to w: a gzipped tar (or,
// for Windows, a zip) holding each file at its base name, executable,
// stamped with modTime so two builds of the same binaries pack the same.
func Pack(w io.Writer, p Platform, paths []string, modTime time.Time) error {
	if p.OS == "windows" {
		zw := zip.NewWriter(w)
		for _, path := range paths {
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			h := &zip.FileHeader{Name: filepath.Base(path), Method: zip.Deflate, Modified: modTime}
			h.SetMode(0o755)
			f, err := zw.CreateHeader(h)
			if err != nil {
				return err
			}
			if _, err := f.Write(data); err != nil {
				return err
			}
		}
		return zw.Close()
	}
	gz, err := gzip.NewWriterLevel(w, gzip.DefaultCompression)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(gz)
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		h := &tar.Header{Name: filepath.Base(path), Mode: 0o755, Size: int64(len(data)), ModTime: modTime, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := tw.Write(data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

// maxProgram bounds a program unpacked from an archive: a release's
// programs are tens of MiB; an archive claiming more is not ours.
const maxProgram = 512 << 20

// Unpack is the file named name in p's archive data (at its top level).
// A missing file is ErrNotFound; an archive that does not read is
// rm.ErrInvalid.
func Unpack(data []byte, p Platform, name string) ([]byte, error) {
	if p.OS == "windows" {
		zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return nil, fmt.Errorf("%w: the archive is not a zip: %v", rm.ErrInvalid, err)
		}
		for _, f := range zr.File {
			if f.Name != name {
				continue
			}
			rc, err := f.Open()
			if err != nil {
				return nil, fmt.Errorf("%w: %s in the archive: %v", rm.ErrInvalid, name, err)
			}
			defer rc.Close()
			return readBounded(rc, name)
		}
		return nil, fmt.Errorf("%w: the archive holds no %s", ErrNotFound, name)
	}
	gz, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%w: the archive is not gzipped: %v", rm.ErrInvalid, err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil, fmt.Errorf("%w: the archive holds no %s", ErrNotFound, name)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: the archive does not read: %v", rm.ErrInvalid, err)
		}
		if h.Name == name && h.Typeflag == tar.TypeReg {
			return readBounded(tr, name)
		}
	}
}

func readBounded(r io.Reader, name string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxProgram+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %s in the archive: %v", rm.ErrInvalid, name, err)
	}
	if len(data) > maxProgram {
		return nil, fmt.Errorf("%w: %s in the archive is over %d MiB", rm.ErrInvalid, name, maxProgram>>20)
	}
	return data, nil
}
