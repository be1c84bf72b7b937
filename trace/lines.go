package trace

import (
	"bufio"
	"errors"
	"io"
)

const (
	bufSize = 64 << 10
	// maxLine bounds memory on a file with no newlines; real trace lines
	// are under a hundred bytes.
	maxLine = 1 << 20
)

var errLong = errors.New("line longer than 1 MiB")

// lines reads a file one line at a time without allocating per line.
type lines struct {
	r    *bufio.Reader
	n    int    // number of the line last returned (or failed)
	long []byte // reused for lines longer than the bufio buffer
}

func newLines(r io.Reader) lines { return lines{r: bufio.NewReaderSize(r, bufSize)} }

// next returns the next line without its "\n" or "\r\n"; the slice is valid
// until the next call. The last line need not end in a newline.
func (l *lines) next() ([]byte, error) {
	b, err := l.r.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		l.long = append(l.long[:0], b...)
		for err == bufio.ErrBufferFull {
			if len(l.long) > maxLine {
				l.n++
				return nil, errLong
			}
			b, err = l.r.ReadSlice('\n')
			l.long = append(l.long, b...)
		}
		b = l.long
	}
	if err == io.EOF && len(b) == 0 {
		return nil, io.EOF
	}
	l.n++
	if err != nil && err != io.EOF {
		return nil, err
	}
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
	}
	if n := len(b); n > 0 && b[n-1] == '\r' {
		b = b[:n-1]
	}
	if len(b) > maxLine {
		return nil, errLong
	}
	return b, nil
}
