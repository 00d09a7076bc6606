package commit

import (
	"reflect"
	"testing"
	"time"
)

// arg, the batch writer's conversion without reflection, gives what argOf gives for every
// kind of argument the merged statements carry, and converting twice changes nothing (exec
// converts a batch's arguments in place).
func TestArgIsArgOf(t *testing.T) {
	type state string
	at := time.Date(2026, 11, 26, 17, 0, 0, 123456000, time.FixedZone("x", 3600))
	s, none := "s", (*string)(nil)
	for _, a := range []any{nil, "text", int64(-5), 7, true, at, &at, &s, none, state("open"), []byte("b"), int32(3)} {
		want := argOf(reflect.ValueOf(a))
		got := arg(a)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("arg(%#v) = %#v, argOf gives %#v", a, got, want)
		}
		if again := arg(got); !reflect.DeepEqual(again, got) {
			t.Errorf("arg(arg(%#v)) = %#v, not %#v", a, again, got)
		}
	}
	if got := arg(at); got != "2026-11-26 16:00:00.123456+00:00" {
		t.Errorf("a time is %v, not as bun writes it in UTC", got)
	}
}

// argOf of a row's field (addressable, as insertRows reads it) is what it is of the value alone.
func TestArgOfField(t *testing.T) {
	type row struct {
		S  string
		N  int64
		At time.Time
		P  *string
		Q  *time.Time
	}
	s, at := "x", time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
	r := row{S: "s", N: 300, At: at, P: &s, Q: &at}
	v := reflect.ValueOf(&r).Elem()
	for i := range v.NumField() {
		got, want := argOf(v.Field(i)), argOf(reflect.ValueOf(v.Field(i).Interface()))
		if !reflect.DeepEqual(got, want) {
			t.Errorf("field %s: %#v, not %#v", v.Type().Field(i).Name, got, want)
		}
	}
}
