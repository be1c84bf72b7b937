package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"statesim/sweep"
)

// checkedWriter keeps the first error writing to stdout (a full disk, a
// closed pipe), so that a report that never arrived is exit 2, whichever
// command wrote it and however it reported the failure.
type checkedWriter struct {
	w   io.Writer
	err error
}

func (c *checkedWriter) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(p)
	if err != nil {
		c.err = err
	}
	return n, err
}

// outputFailed reports an output that could not be written, naming the
// flag and the path, and is exit 2 (as `check --out` always was).
func outputFailed(stderr io.Writer, flag, path string, err error) int {
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Path == path {
		err = pe.Err // the path is named once
	}
	if flag != "" {
		flag += " "
	}
	fmt.Fprintf(stderr, "statesim: %s%s: cannot write: %v\n", flag, path, err)
	return exitBadInput
}

// isFileError says whether err came from the file system (a path that
// cannot be created, written or renamed; a full device), not from
// statesim itself.
func isFileError(err error) bool {
	var pe *fs.PathError
	var le *os.LinkError
	var se *os.SyscallError
	var errno syscall.Errno
	var de *sweep.DirError
	return errors.As(err, &pe) || errors.As(err, &le) || errors.As(err, &se) || errors.As(err, &errno) || errors.As(err, &de)
}

// samePath says whether two paths name one file: equal once made
// absolute, or the same file on disk (a link, a second name).
func samePath(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	aa, err1 := filepath.Abs(a)
	bb, err2 := filepath.Abs(b)
	if err1 == nil && err2 == nil && aa == bb {
		return true
	}
	sa, err1 := os.Stat(a)
	sb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(sa, sb)
}

// distinctOutputs refuses an output path that is also an input (the
// scenario, its trace or config.json: writing would destroy it) or that
// two output flags share (one file of two formats).
func distinctOutputs(outputs [][2]string, inputs []string) error {
	for i, o := range outputs {
		if o[1] == "" {
			continue
		}
		for _, in := range inputs {
			if samePath(o[1], in) {
				return fmt.Errorf("%s %s is an input of this run: writing it would overwrite it; choose another path", o[0], o[1])
			}
		}
		for _, p := range outputs[:i] {
			if samePath(o[1], p[1]) {
				return fmt.Errorf("%s and %s both name %s: give each output its own file", p[0], o[0], o[1])
			}
		}
	}
	return nil
}
