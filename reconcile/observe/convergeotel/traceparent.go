package convergeotel

import (
	"encoding/hex"

	"go.opentelemetry.io/otel/trace"
)

// Traceparent returns sc as a W3C traceparent, "" if sc is not valid.
func Traceparent(sc trace.SpanContext) string {
	if !sc.IsValid() {
		return ""
	}
	var b [55]byte
	tid, sid := sc.TraceID(), sc.SpanID()
	copy(b[:], "00-")
	hex.Encode(b[3:35], tid[:])
	b[35] = '-'
	hex.Encode(b[36:52], sid[:])
	copy(b[52:], "-00")
	if sc.IsSampled() {
		b[54] = '1'
	}
	return string(b[:])
}

// SpanContextOf parses a W3C traceparent (store.Event.Cause) into a remote
// span context; ok is false for "" or a value that is not one.
func SpanContextOf(traceparent string) (sc trace.SpanContext, ok bool) {
	if len(traceparent) != 55 || traceparent[:3] != "00-" {
		return sc, false
	}
	tid, err := trace.TraceIDFromHex(traceparent[3:35])
	if err != nil {
		return sc, false
	}
	sid, err := trace.SpanIDFromHex(traceparent[36:52])
	if err != nil {
		return sc, false
	}
	var flags trace.TraceFlags
	switch traceparent[53:] {
	case "00":
	case "01":
		flags = trace.FlagsSampled
	default:
		flags = trace.TraceFlags(hexByte(traceparent[53:]))
	}
	sc = trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: flags, Remote: true})
	return sc, sc.IsValid()
}

func hexByte(s string) byte {
	var b byte
	for i := 0; i < 2; i++ {
		c := s[i]
		b <<= 4
		switch {
		case '0' <= c && c <= '9':
			b |= c - '0'
		case 'a' <= c && c <= 'f':
			b |= c - 'a' + 10
		}
	}
	return b
}
