package api

import (
	"errors"
	"io"
	"unicode/utf8"
)

// errInvalidUTF8 refuses a request body that is not UTF-8: encoding/json
// would turn each bad byte into U+FFFD and schedule a body the producer
// never sent.
var errInvalidUTF8 = errors.New("the request body is not valid UTF-8: JSON text must be; send bytes as body_base64")

// utf8Reader passes a reader's bytes on and fails with errInvalidUTF8 at
// the first byte that is not UTF-8, a rune cut across two reads included.
type utf8Reader struct {
	r    io.Reader
	tail []byte // the start of a rune the last read cut
	buf  []byte
}

func (u *utf8Reader) Read(p []byte) (int, error) {
	n, err := u.r.Read(p)
	u.buf = append(append(u.buf[:0], u.tail...), p[:n]...)
	end := len(u.buf)
	for i := len(u.buf) - 1; i >= 0 && i >= len(u.buf)-utf8.UTFMax; i-- {
		if utf8.RuneStart(u.buf[i]) {
			if !utf8.FullRune(u.buf[i:]) {
				end = i
			}
			break
		}
	}
	// Failing, hand over no byte: encoding/json would decode a value
	// complete in them and drop the error.
	if !utf8.Valid(u.buf[:end]) {
		return 0, errInvalidUTF8
	}
	u.tail = append(u.tail[:0], u.buf[end:]...)
	if err == io.EOF && len(u.tail) > 0 {
		return 0, errInvalidUTF8
	}
	return n, err
}
