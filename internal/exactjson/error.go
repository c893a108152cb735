package exactjson

import (
	"fmt"

	"github.com/converge-go/converge/internal/invalid"
)

// Problem is the part of the rule a text breaks.
type Problem int

// The problems an Error names.
const (
	Malformed     Problem = iota + 1 // not one well-formed JSON value in UTF-8
	TooDeep                          // nested deeper than MaxDepth
	Duplicate                        // an object names a member twice
	LoneSurrogate                    // an escaped lone surrogate
	LongExponent                     // a number's exponent has more than 18 digits
	NotObject                        // ParseObject: the value is not an object
)

// Error is a text's breach of the rule: where, which part, and for a
// duplicate its name, for a lone surrogate its code unit.
type Error struct {
	Offset  int     // the byte of the text where it was found
	Problem Problem // the part of the rule broken
	Name    string  // Duplicate: the member name, as text
	Unit    rune    // LoneSurrogate: the code unit
	what    string
}

func (e *Error) Error() string { return fmt.Sprintf("JSON at byte %d: %s", e.Offset, e.what) }

// Is reports whether target is an invalid-input sentinel, such as
// store.ErrInvalid.
func (e *Error) Is(target error) bool {
	_, ok := target.(*invalid.Error)
	return ok
}
