package jsonlimit_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/switchboard-hq/switchboard/tools/jsonlimit"
)

func nested(open, close string, n int) []byte {
	return []byte(strings.Repeat(open, n) + strings.Repeat(close, n))
}

func TestDepth(t *testing.T) {
	max := jsonlimit.MaxDepth
	for _, tc := range []struct {
		name string
		data []byte
		at   int // -1: accepted
	}{
		{"flat", []byte(`{"a":1,"b":[1,2,3]}`), -1},
		{"arrays at the limit", nested("[", "]", max), -1},
		{"objects at the limit", nested(`{"a":`, "}", max), -1},
		{"arrays past the limit", nested("[", "]", max+1), max},
		{"objects past the limit", nested(`{"a":`, "}", max+1), 5 * max},
		{"mixed past the limit", nested(`[{"k":`, "}]", max), max * 6 / 2},
		{"brackets inside strings do not count", []byte(`{"a":"` + strings.Repeat("[{", 1000) + `"}`), -1},
		{"an escaped quote does not end a string", []byte(`["\"` + strings.Repeat("[", 1000) + `"]`), -1},
		{"closing more than opened stays at zero", []byte(`]]]]` + string(nested("[", "]", max))), -1},
		{"half a million levels", nested("[", "]", 500_000), max},
		{"many items are not Depth's business", []byte("[" + strings.Repeat("0,", 200_000) + "0]"), -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := jsonlimit.Depth(tc.data)
			if tc.at < 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var le *jsonlimit.Error
			if !errors.As(err, &le) || le.Items {
				t.Fatalf("%v; want a depth error at byte %d", err, tc.at)
			}
			if le.Offset != tc.at || le.Limit != max {
				t.Fatalf("error %+v; want offset %d, limit %d", le, tc.at, max)
			}
			if !strings.Contains(err.Error(), "64 levels") {
				t.Fatalf("the message does not name the limit: %q", err)
			}
		})
	}
}

func TestRequestCountsItems(t *testing.T) {
	max := jsonlimit.MaxItems
	ok := []string{
		"[" + strings.Repeat("0,", max-2) + "0]",             // max-1 commas + 1 array
		"{" + strings.Repeat(`"k":[],`, max/2-1) + `"z":0}`,  // members and their arrays
		`{"s":"` + strings.Repeat(",", 3*max) + `"}`,         // commas inside a string
		"[" + strings.Repeat("0,", max-3) + `"a,b,c,d,e,f"]`, // the same, at the edge
	}
	for _, s := range ok {
		if err := jsonlimit.Request([]byte(s)); err != nil {
			t.Errorf("%.40s… (%d bytes) refused: %v", s, len(s), err)
		}
	}
	for _, s := range []string{
		"[" + strings.Repeat("0,", max) + "0]",
		"[" + strings.Repeat("[],", max) + "0]",
		"[" + strings.Repeat("{},", max/2+1) + "0]",
	} {
		var le *jsonlimit.Error
		if err := jsonlimit.Request([]byte(s)); !errors.As(err, &le) || !le.Items || !strings.Contains(err.Error(), "more than 50000 items") {
			t.Errorf("%.40s… (%d bytes): %v; want an items error naming the limit", s, len(s), err)
		}
	}
}

func TestScanAllocatesNothing(t *testing.T) {
	deep := nested("[", "]", 500_000)
	if n := testing.AllocsPerRun(5, func() { _ = jsonlimit.Request(deep) }); n > 1 {
		t.Fatalf("a deep refusal allocated %v times; want at most the error", n)
	}
	wide := []byte(`[` + strings.Repeat(`{"a":[1,2]},`, 10_000) + `0]`)
	if n := testing.AllocsPerRun(5, func() { _ = jsonlimit.Request(wide) }); n != 0 {
		t.Fatalf("accepted text allocated %v times; want 0", n)
	}
}
