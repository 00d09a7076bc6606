package signing

import (
	"container/list"
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Dedupe defaults: the spec's "about 60 seconds".
const (
	DefaultDedupeTTL        = 60 * time.Second
	DefaultDedupeMaxEntries = 10000
	DefaultDedupeMaxBytes   = 64 << 20
	// maxRecordedBody is the largest response DedupeMiddleware keeps for replay.
	maxRecordedBody = 1 << 20
)

// Dedupe runs one function per key and shares its result: a duplicate that arrives while
// the first is running waits for it, a duplicate within TTL after it gets the same result.
// Memory is bounded by MaxEntries and, when SizeOf is set, MaxBytes; the oldest results are
// dropped first. Set the exported fields before first use. It is safe for concurrent use.
type Dedupe[T any] struct {
	TTL        time.Duration
	MaxEntries int
	MaxBytes   int64
	SizeOf     func(T) int64    // nil: MaxBytes is not enforced
	Now        func() time.Time // nil means time.Now

	mu    sync.Mutex
	m     map[string]*dedupeEntry[T]
	order list.List // of *dedupeEntry[T], oldest first
	bytes int64
}

type dedupeEntry[T any] struct {
	key     string
	done    chan struct{}
	val     T
	failed  bool // the function panicked: waiters retry
	pending bool
	removed bool
	expires time.Time
	size    int64
	elem    *list.Element
}

// NewDedupe returns a Dedupe keeping results for ttl, at most maxEntries of them.
func NewDedupe[T any](ttl time.Duration, maxEntries int) *Dedupe[T] {
	return &Dedupe[T]{TTL: ttl, MaxEntries: maxEntries}
}

func (d *Dedupe[T]) now() time.Time {
	if d.Now != nil {
		return d.Now()
	}
	return time.Now()
}

// Do returns the result of fn for key. The first caller runs fn; keep reports whether its
// result may be replayed to later callers (return false for transient failures so a retry
// runs again; callers already waiting still share it). replayed reports that v came from
// another call. err is non-nil only when ctx ends while waiting for a running call.
func (d *Dedupe[T]) Do(ctx context.Context, key string, fn func() (v T, keep bool)) (v T, replayed bool, err error) {
	for {
		d.mu.Lock()
		if d.m == nil {
			d.m = make(map[string]*dedupeEntry[T])
		}
		now := d.now()
		d.evictExpired(now)
		if e, ok := d.m[key]; ok && (e.pending || now.Before(e.expires)) {
			d.mu.Unlock()
			select {
			case <-e.done:
			case <-ctx.Done():
				var zero T
				return zero, false, ctx.Err()
			}
			if e.failed {
				continue
			}
			return e.val, true, nil
		} else if ok {
			d.remove(e)
		}
		e := &dedupeEntry[T]{key: key, done: make(chan struct{}), pending: true}
		e.elem = d.order.PushBack(e)
		d.m[key] = e
		d.evictOverflow()
		d.mu.Unlock()
		return d.run(e, fn), false, nil
	}
}

func (d *Dedupe[T]) run(e *dedupeEntry[T], fn func() (T, bool)) T {
	finished := false
	defer func() {
		if finished {
			return
		}
		// fn panicked: let waiters run it themselves, then let the panic go on.
		d.mu.Lock()
		e.failed = true
		e.pending = false
		d.remove(e)
		d.mu.Unlock()
		close(e.done)
	}()
	v, keep := fn()
	d.mu.Lock()
	e.val = v
	e.pending = false
	if keep && !e.removed {
		e.expires = d.now().Add(d.TTL)
		if d.SizeOf != nil {
			e.size = d.SizeOf(v)
			d.bytes += e.size
		}
		d.evictOverflow()
	} else {
		d.remove(e)
	}
	d.mu.Unlock()
	finished = true
	close(e.done)
	return v
}

func (d *Dedupe[T]) remove(e *dedupeEntry[T]) {
	if e.removed {
		return
	}
	e.removed = true
	d.order.Remove(e.elem)
	if d.m[e.key] == e {
		delete(d.m, e.key)
	}
	d.bytes -= e.size
}

// evictExpired drops expired results from the front; entries are roughly in expiry order
// (a long-running call may hold back a few expired ones behind it until it ends).
func (d *Dedupe[T]) evictExpired(now time.Time) {
	for el := d.order.Front(); el != nil; {
		e := el.Value.(*dedupeEntry[T])
		next := el.Next()
		if !e.pending {
			if now.Before(e.expires) {
				return
			}
			d.remove(e)
		}
		el = next
	}
}

// evictOverflow drops the oldest entries beyond the limits. A dropped running entry still
// completes for its waiters but is not kept.
func (d *Dedupe[T]) evictOverflow() {
	for d.order.Len() > 0 && ((d.MaxEntries > 0 && d.order.Len() > d.MaxEntries) || (d.MaxBytes > 0 && d.bytes > d.MaxBytes)) {
		d.remove(d.order.Front().Value.(*dedupeEntry[T]))
	}
}

// Len returns the number of entries held (running and kept).
func (d *Dedupe[T]) Len() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.order.Len()
}

// RecordedResponse is an HTTP response kept by DedupeMiddleware.
type RecordedResponse struct {
	Status int
	Header http.Header
	Body   []byte
}

// NewResponseDedupe returns a Dedupe for DedupeMiddleware with the defaults: 60 s, 10000
// responses, 64 MiB.
func NewResponseDedupe() *Dedupe[*RecordedResponse] {
	d := NewDedupe[*RecordedResponse](DefaultDedupeTTL, DefaultDedupeMaxEntries)
	d.MaxBytes = DefaultDedupeMaxBytes
	d.SizeOf = func(r *RecordedResponse) int64 {
		if r == nil {
			return 0
		}
		n := int64(len(r.Body)) + 64
		for k, vs := range r.Header {
			n += int64(len(k))
			for _, v := range vs {
				n += int64(len(v))
			}
		}
		return n
	}
	return d
}

// HeaderReplayed marks a response replayed by DedupeMiddleware.
const HeaderReplayed = "Idempotent-Replayed"

// DedupeMiddleware replays the first response per requestId: place it inside Middleware
// (Middleware(v, DedupeMiddleware(d, handler))) so only verified envelopes are keyed. The
// first request runs next; a duplicate arriving meanwhile waits for it; a duplicate within
// d.TTL gets the recorded status, headers and body with "Idempotent-Replayed: true". 5xx
// responses and bodies over 1 MiB are not kept, so the service's retry after a 5xx runs
// the handler again. Requests without a verified envelope pass through.
func DedupeMiddleware(d *Dedupe[*RecordedResponse], next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		env, ok := EnvelopeFromContext(r.Context())
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		rec, replayed, err := d.Do(r.Context(), env.RequestID, func() (*RecordedResponse, bool) {
			rw := &recordingWriter{ResponseWriter: w}
			next.ServeHTTP(rw, r)
			if rw.status == 0 {
				rw.status = http.StatusOK
			}
			if rw.overflow {
				return nil, false
			}
			return &RecordedResponse{Status: rw.status, Header: rw.header, Body: rw.body}, rw.status < 500
		})
		if err != nil || !replayed {
			return // the client went away, or the response was written by next itself
		}
		if rec == nil {
			next.ServeHTTP(w, r) // the first response could not be recorded: run again
			return
		}
		h := w.Header()
		for k, vs := range rec.Header {
			h[k] = append([]string(nil), vs...)
		}
		h.Set(HeaderReplayed, "true")
		h.Set("Content-Length", strconv.Itoa(len(rec.Body)))
		w.WriteHeader(rec.Status)
		_, _ = w.Write(rec.Body)
	})
}

// recordingWriter writes through to the client and keeps a copy of the response.
type recordingWriter struct {
	http.ResponseWriter
	status   int
	header   http.Header
	body     []byte
	overflow bool
}

func (rw *recordingWriter) WriteHeader(code int) {
	if rw.status == 0 {
		rw.status = code
		rw.header = rw.ResponseWriter.Header().Clone()
	}
	rw.ResponseWriter.WriteHeader(code)
}

func (rw *recordingWriter) Write(b []byte) (int, error) {
	if rw.status == 0 {
		rw.WriteHeader(http.StatusOK)
	}
	if !rw.overflow {
		if len(rw.body)+len(b) > maxRecordedBody {
			rw.overflow = true
			rw.body = nil
		} else {
			rw.body = append(rw.body, b...)
		}
	}
	return rw.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (rw *recordingWriter) Unwrap() http.ResponseWriter { return rw.ResponseWriter }
