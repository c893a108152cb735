// Package exactjson is the project's one rule for exact JSON: a JSON text
// read so that what it says is kept exactly, or refused with an error that
// names the problem. Under the rule a text is
//
//   - one well-formed JSON value (RFC 8259) in valid UTF-8, with nothing
//     after it but whitespace, nested at most MaxDepth arrays and objects
//     deep;
//   - without an object that names a member twice: names are compared by
//     their text, so "a" and "\u0061" are one name (encoding/json would
//     keep one member of the two, silently);
//   - without an escaped lone surrogate ("\ud800" alone), which
//     encoding/json reads as U+FFFD, unless Options.LoneSurrogates accepts
//     it, as a code unit distinct from every other text;
//   - with numbers that are exact decimals: 1, 1.0 and 10e-1 are one number,
//     9007199254740993 and 9007199254740992 are two, whatever float64
//     makes of them; an exponent of more than 18 digits is refused.
//
// Check tests a text against the rule without building anything (one
// allocation, for a text whose objects have up to 64 members, with no
// escape in their names); Parse and ParseObject also give its Value, whose Equal compares
// JSON values exactly: objects member by member in any order, arrays in
// order, strings by their text, numbers as decimals. A text that breaks the
// rule fails with an *Error, which matches store.ErrInvalid (and every
// package's invalid-input sentinel) under errors.Is.
package exactjson
