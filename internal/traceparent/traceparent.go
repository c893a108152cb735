// Package traceparent checks W3C Trace Context traceparent values
// ("00-<32 hex trace-id>-<16 hex parent-id>-<2 hex flags>") without
// depending on a tracing library: the store carries them as opaque text.
package traceparent

// Len is the length of a version-00 traceparent, the only form kept.
const Len = 55

// Clean returns s as a version-00 traceparent and true if s is a valid
// traceparent, else "" and false. A value of a later version is cut to its
// version-00 fields, as the W3C recommendation asks of a receiver; trace
// and parent IDs of all zeros, upper-case hex and version ff are refused.
func Clean(s string) (string, bool) {
	if len(s) < Len || len(s) > Len && (s[:2] == "00" || s[Len] != '-') {
		return "", false
	}
	s = s[:Len]
	if s[2] != '-' || s[35] != '-' || s[52] != '-' || s[:2] == "ff" {
		return "", false
	}
	if !hex(s[:2]) || !hex(s[3:35]) || !hex(s[36:52]) || !hex(s[53:]) {
		return "", false
	}
	if zeros(s[3:35]) || zeros(s[36:52]) {
		return "", false
	}
	if s[:2] != "00" {
		s = "00" + s[2:]
	}
	return s, true
}

// TraceID returns the trace-id field of a traceparent Clean accepted.
func TraceID(s string) string {
	if len(s) != Len {
		return ""
	}
	return s[3:35]
}

func hex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func zeros(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != '0' {
			return false
		}
	}
	return true
}
