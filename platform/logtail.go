package platform

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
)

// RunnerLogName is the file in an attempt root that receives the runner's
// stdout and stderr (the native launcher's; kept by KeepLogs).
const RunnerLogName = "runner.log"

// TailLines returns the last n lines of r (a runner log, say), without
// their line ends and as valid UTF-8, reading backwards from the end at
// most maxBytes: a log of very long lines gives fewer lines rather than a
// huge read. A line cut by that bound is left out.
func TailLines(r io.ReaderAt, n int, maxBytes int64) ([]string, error) {
	if n <= 0 {
		return nil, nil
	}
	size, err := sizeOf(r)
	if err != nil {
		return nil, err
	}
	const chunk = 8 << 10
	var chunks [][]byte // from the end backwards
	pos, newlines := size, 0
	for pos > 0 && size-pos < maxBytes && newlines <= n {
		read := min(chunk, pos, maxBytes-(size-pos))
		pos -= read
		b := make([]byte, read)
		if _, err := r.ReadAt(b, pos); err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("read the log: %w", err)
		}
		newlines += bytes.Count(b, []byte{'\n'})
		chunks = append(chunks, b)
	}
	buf := make([]byte, 0, size-pos)
	for i := len(chunks) - 1; i >= 0; i-- {
		buf = append(buf, chunks[i]...)
	}
	if pos > 0 {
		// The first line started before what was read.
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			return nil, nil
		}
		buf = buf[i+1:]
	}
	buf = bytes.TrimSuffix(buf, []byte{'\n'})
	if len(buf) == 0 {
		return nil, nil
	}
	all := strings.Split(string(buf), "\n")
	all = all[max(0, len(all)-n):]
	out := make([]string, len(all))
	for i, l := range all {
		out[i] = strings.ToValidUTF8(strings.TrimSuffix(l, "\r"), "\uFFFD")
	}
	return out, nil
}

func sizeOf(r io.ReaderAt) (int64, error) {
	switch r := r.(type) {
	case interface{ Stat() (fs.FileInfo, error) }:
		fi, err := r.Stat()
		if err != nil {
			return 0, fmt.Errorf("read the log's size: %w", err)
		}
		return fi.Size(), nil
	case interface{ Size() int64 }:
		return r.Size(), nil
	}
	return 0, errors.New("cannot tell the log's size")
}

// SeekLastLines positions f at the start of its last n lines (the whole
// file if it has fewer), reading backwards from the end in blocks, so that
// what follows in f can be copied as it grows.
func SeekLastLines(f *os.File, n int) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	size := fi.Size()
	const block = 16 << 10
	buf := make([]byte, block)
	lines := 0
	for pos := size; pos > 0; {
		readSize := min(int64(block), pos)
		pos -= readSize
		if _, err := f.ReadAt(buf[:readSize], pos); err != nil && err != io.EOF {
			return err
		}
		for i := readSize - 1; i >= 0; i-- {
			if buf[i] != '\n' || pos+i == size-1 { // the final newline ends the last line
				continue
			}
			lines++
			if lines == n {
				_, err := f.Seek(pos+i+1, io.SeekStart)
				return err
			}
		}
	}
	_, err = f.Seek(0, io.SeekStart)
	return err
}
