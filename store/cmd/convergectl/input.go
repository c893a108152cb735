package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// readValue reads the JSON value in file ("" or "-": stdin). It reads at
// most -max-value-size bytes and one more: an input larger than the limit
// is refused with errInvalid, from a file as from stdin, without reading
// the rest of it.
func (c *cli) readValue(file string) (value, error) {
	r := c.stdin
	if file != "" && file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	limit := c.flags.maxValueSize
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%w: value larger than %d bytes (-max-value-size)", errInvalid, limit)
	}
	if !json.Valid(b) {
		return nil, fmt.Errorf("%w: the value is not valid JSON", errInvalid)
	}
	return value(bytes.TrimSpace(b)), nil
}
