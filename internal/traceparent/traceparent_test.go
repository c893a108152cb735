package traceparent

import "testing"

func TestCleanKeepsValidTraceparentsAndRefusesTheRest(t *testing.T) {
	const ok = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{ok, ok, true},
		{"01" + ok[2:] + "-more", "00" + ok[2:], true},
		{"", "", false},
		{ok + "-more", "", false}, // version 00 has no more fields
		{"ff" + ok[2:], "", false},
		{"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", "", false},
		{"00-00000000000000000000000000000000-00f067aa0ba902b7-01", "", false},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", "", false},
		{"00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "", false},
		{ok[:54], "", false},
	} {
		got, gotOK := Clean(tc.in)
		if got != tc.want || gotOK != tc.ok {
			t.Errorf("Clean(%q) = %q, %v; want %q, %v", tc.in, got, gotOK, tc.want, tc.ok)
		}
	}
	if id := TraceID(ok); id != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Errorf("TraceID = %q", id)
	}
}

func FuzzCleanNeverPanicsAndKeepsOnlyValid(f *testing.F) {
	f.Add("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := Clean(s)
		if !ok {
			return
		}
		if again, ok2 := Clean(got); !ok2 || again != got {
			t.Fatalf("Clean(%q) = %q, which Clean does not keep", s, got)
		}
	})
}
