package infile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// Caps on whole-file inputs (README, "Bounds"). Real scenarios and sweeps
// are a few KiB, config.json files a few KiB (MiniMax's, the largest
// built in, is under 4 KiB).
const (
	MaxScenarioBytes = 1 << 20 // a scenario or sweep YAML file
	MaxConfigBytes   = 1 << 20 // a Hugging Face config.json
	MaxCellBytes     = 1 << 20 // a sweep's cell file or manifest
)

// TooLargeError is a file over its cap.
type TooLargeError struct {
	Path string
	Kind string // "scenario file", "config.json"
	Max  int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s: larger than %s, the most a %s may hold", e.Path, Size(e.Max), e.Kind)
}

// Size words a byte count ("1 MiB", "300 bytes").
func Size(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// Open opens path for reading. A directory or socket is refused; a named
// pipe is opened without waiting for a writer (one that never comes reads
// as empty instead of hanging); a device such as /dev/zero opens, and the
// caller's bound on what it reads applies.
func Open(path string) (*os.File, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	switch m := st.Mode(); {
	case m.IsDir():
		return nil, fmt.Errorf("%s: is a directory, not a file", path)
	case m&fs.ModeSocket != 0:
		return nil, fmt.Errorf("%s: is a socket, not a file", path)
	case m&fs.ModeNamedPipe != 0:
		// O_NONBLOCK: open(2) of a FIFO blocks until a writer opens it.
		// The file is then read through the runtime's poller, so reads
		// still wait for data while a writer is attached.
		return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	}
	return os.Open(path)
}

// ReadFile reads all of path, refusing more than max bytes: a regular
// file by its size before reading, anything else (a pipe, a device) by
// reading at most max+1 bytes.
func ReadFile(path, kind string, max int64) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() > max {
		return nil, &TooLargeError{Path: path, Kind: kind, Max: max}
	}
	return ReadAll(f, path, kind, max)
}

// ReadAll reads r to its end, refusing more than max bytes.
func ReadAll(r io.Reader, name, kind string, max int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if int64(len(b)) > max {
		return nil, &TooLargeError{Path: name, Kind: kind, Max: max}
	}
	return b, nil
}

// ErrExpansion is a compressed stream that expands past its bound.
var ErrExpansion = errors.New("expands too far")

// ExpansionReader bounds what a decompressor yields by what it consumed:
// at most Ratio times the compressed bytes read so far, plus Slack (a
// small file's header and first block). Wrap the compressed source in
// Counter and hand it to the decompressor.
type ExpansionReader struct {
	R     io.Reader // the decompressed stream
	In    *Counter  // the compressed bytes consumed
	Ratio int64
	Slack int64
	out   int64
}

func (e *ExpansionReader) Read(p []byte) (int, error) {
	n, err := e.R.Read(p)
	e.out += int64(n)
	if e.out > e.Ratio*e.In.N+e.Slack {
		return n, fmt.Errorf("%w: %s from %s compressed, more than %d times", ErrExpansion, Size(e.out), Size(e.In.N), e.Ratio)
	}
	return n, err
}

// Counter counts the bytes read through it.
type Counter struct {
	R io.Reader
	N int64
}

func (c *Counter) Read(p []byte) (int, error) {
	n, err := c.R.Read(p)
	c.N += int64(n)
	return n, err
}
