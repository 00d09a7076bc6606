package commit

import (
	"context"
	"database/sql"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/schema"
)

// SQLite parses every statement it is sent, and bun renders values into the text, so no two
// of the batch writer's statements were alike: its rows, a handful per call, cost SQLite more
// to parse than to write. On SQLite the batch writer's statements, each for a run of 1, 2, 4...
// rows (runs), are run prepared instead (store.ExecPrepared), with arguments given as bun
// would have rendered them (times as bun's UTC text), so what is stored reads back and
// compares the same.

// rowWrite is one statement of a merged write: text with args for a prepared statement, or
// text complete as bun rendered it (args nil).
type rowWrite struct {
	text string
	args []any
}

// writer writes a batcher's merged rows: the store, and the INSERT of each run length of
// each model it has written.
type writer struct {
	store   *store.Store
	inserts sync.Map // insertForm -> *rowInsert
}

// raw is w for bun to render, its values inline.
func (w rowWrite) raw(tx bun.IDB) *bun.RawQuery { return tx.NewRaw(w.text, w.args...) }

// exec runs rw inside tx: prepared, with its arguments as bun would render them (converted
// in place: a rowWrite is rendered for one batch, and argOf of an argument is itself).
func (w *writer) exec(ctx context.Context, tx bun.Tx, rw rowWrite) (sql.Result, error) {
	if rw.args == nil {
		return tx.ExecContext(ctx, rw.text)
	}
	for i, a := range rw.args {
		rw.args[i] = arg(a)
	}
	return w.store.ExecPrepared(ctx, tx, rw.text, rw.args...)
}

// rowInsert is the INSERT of a run of rows of a model, with a placeholder per column and row.
type rowInsert struct {
	text   string
	fields []*schema.Field
}

type insertForm struct {
	t    reflect.Type
	rows int
}

// insertOf returns the INSERT of n rows of model type t (a struct).
func (w *writer) insertOf(t reflect.Type, n int) *rowInsert {
	if ri, ok := w.inserts.Load(insertForm{t, n}); ok {
		return ri.(*rowInsert)
	}
	table := w.store.DB().Table(t)
	cols, marks := make([]string, len(table.Fields)), make([]string, len(table.Fields))
	for i, f := range table.Fields {
		cols[i], marks[i] = string(f.SQLName), "?"
	}
	values := make([]string, n)
	for i := range values {
		values[i] = "(" + strings.Join(marks, ", ") + ")"
	}
	ri := &rowInsert{text: "INSERT INTO " + string(table.SQLName) + " (" + strings.Join(cols, ", ") + ") VALUES " + strings.Join(values, ", "),
		fields: table.Fields}
	w.inserts.Store(insertForm{t, n}, ri)
	return ri
}

// insertRows is rows (a slice of a model) as prepared INSERTs, one per run (runs).
func insertRows[T any](w *writer, rows []T) []rowWrite {
	var out []rowWrite
	for _, run := range runs(rows) {
		ri := w.insertOf(reflect.TypeFor[T](), len(run))
		args := make([]any, 0, len(run)*len(ri.fields))
		for i := range run {
			v := reflect.ValueOf(&run[i]).Elem()
			for _, f := range ri.fields {
				args = append(args, argOf(f.Value(v))) // as bun renders them
			}
		}
		out = append(out, rowWrite{text: ri.text, args: args})
	}
	return out
}

// arg is argOf(reflect.ValueOf(a)), without reflection (nor a new box) for what it leaves as is.
func arg(a any) any {
	switch v := a.(type) {
	case nil, string, int64, int, bool:
		return a
	case time.Time:
		return v.UTC().Format(bunTime)
	}
	return argOf(reflect.ValueOf(a))
}

// argOf is a value as an argument: NULL for a nil pointer, a time as bun renders it.
func argOf(v reflect.Value) any {
	if !v.IsValid() {
		return nil
	}
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	// A row's field is addressable, and Interface copies an addressable value to the heap:
	// each field is boxed once, by its type, and a time read through its address.
	switch v.Type() {
	case timeType:
		if v.CanAddr() {
			return v.Addr().Interface().(*time.Time).UTC().Format(bunTime)
		}
		return v.Interface().(time.Time).UTC().Format(bunTime)
	case stringType:
		return v.String()
	case int64Type:
		return v.Int()
	}
	return v.Interface()
}

var timeType, stringType, int64Type = reflect.TypeFor[time.Time](), reflect.TypeFor[string](), reflect.TypeFor[int64]()

// bunTime is how bun's SQLite dialect writes a time (schema.BaseDialect.AppendTime).
const bunTime = "2006-01-02 15:04:05.999999-07:00"
