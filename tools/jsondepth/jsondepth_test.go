package jsondepth_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/switchboard-hq/switchboard/tools/jsondepth"
)

func nested(open, close string, n int) []byte {
	return []byte(strings.Repeat(open, n) + strings.Repeat(close, n))
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		data []byte
		at   int // -1: accepted
	}{
		{"flat", []byte(`{"a":1,"b":[1,2,3]}`), -1},
		{"arrays at the limit", nested("[", "]", jsondepth.Max), -1},
		{"objects at the limit", nested(`{"a":`, "}", jsondepth.Max), -1},
		{"arrays past the limit", nested("[", "]", jsondepth.Max+1), jsondepth.Max},
		{"objects past the limit", nested(`{"a":`, "}", jsondepth.Max+1), 5 * jsondepth.Max},
		{"mixed past the limit", nested(`[{"k":`, "}]", jsondepth.Max), jsondepth.Max * 6 / 2},
		{"brackets inside strings do not count", []byte(`{"a":"` + strings.Repeat("[{", 1000) + `"}`), -1},
		{"an escaped quote does not end a string", []byte(`["\"` + strings.Repeat("[", 1000) + `"]`), -1},
		{"closing more than opened stays at zero", []byte(`]]]]` + string(nested("[", "]", jsondepth.Max))), -1},
		{"half a million levels", nested("[", "]", 500_000), jsondepth.Max},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := jsondepth.Check(tc.data)
			if tc.at < 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var de *jsondepth.Error
			if !errors.As(err, &de) {
				t.Fatalf("accepted; want a depth error at byte %d", tc.at)
			}
			if de.Offset != tc.at || de.Limit != jsondepth.Max {
				t.Fatalf("error %+v; want offset %d, limit %d", de, tc.at, jsondepth.Max)
			}
			if !strings.Contains(err.Error(), "64 levels") {
				t.Fatalf("the message does not name the limit: %q", err)
			}
		})
	}
}

func TestCheckAllocatesNothing(t *testing.T) {
	deep := nested("[", "]", 500_000)
	if n := testing.AllocsPerRun(5, func() { _ = jsondepth.Check(deep[:len(deep)/2]) }); n > 1 {
		t.Fatalf("Check allocated %v times on a deep refusal; want at most the error", n)
	}
	wide := []byte(`[` + strings.Repeat(`{"a":[1,2]},`, 50_000) + `0]`)
	if n := testing.AllocsPerRun(5, func() { _ = jsondepth.Check(wide) }); n != 0 {
		t.Fatalf("Check allocated %v times on accepted text; want 0", n)
	}
}
