package mcpserver

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/switchboard-hq/switchboard/tools"
)

// Sessions for hosts that can only be asked in one.
//
// MCP 2026-07-28 is stateless, and so is every other request here, with one exception: a host
// on an earlier revision that declares elicitation (the TypeScript SDK inside Claude Code,
// VS Code and Cursor) can be asked to confirm a write only by a server request on a session,
// and a stateless request forgets its capabilities. Such a host, when its initialize carries
// a valid key, is served a session (the go-sdk's stateful Streamable HTTP handler,
// Mcp-Session-Id): its writes are confirmed by an elicitation, as over stdio. Everything
// else stays stateless.
//
// A session lives on the replica that opened it: its id starts with the replica's name, so a
// load balancer keeps it there (docs/mcp-hosts.md, "Sessions and replicas"). Another replica
// answers 404 for it, as the MCP spec says, and the host initializes again; a confirmation
// that cannot be asked falls back to the confirmRequestId round trip.
//
// Sessions are bounded: a cap per replica and per key, and an idle timeout. A host past a
// cap is served statelessly (the confirmRequestId round trip), never refused. Every request
// on a session is authenticated again: a revoked key ends its sessions, and a session id is
// worth nothing with another key.

// SessionLimits bound the sessions one replica holds.
type SessionLimits struct {
	PerReplica int           // live sessions on this replica; 0 serves none
	PerKey     int           // live sessions of one key (or OAuth grant) on this replica
	Idle       time.Duration // a session without a request for this long is closed
}

// DefaultSessionLimits: a session costs under 14 KB of heap (measured with its go-sdk client
// in the same process: 13.9 KB for both), so 2,000 hold under 30 MB; a host opens one per window, so 16 per key is room for a busy desk; an idle host
// loses its session after 30 minutes and initializes again.
var DefaultSessionLimits = SessionLimits{PerReplica: 2000, PerKey: 16, Idle: 30 * time.Minute}

// HTTPOptions configure the Streamable HTTP door.
type HTTPOptions struct {
	Log *slog.Logger
	// Auth resolves the credential of an initialize that asks for a session, and of every
	// request on one (the kernel's authenticator).
	Auth     tools.Authenticator
	Sessions SessionLimits
	// Kernel answers the tasks/* methods (tasks.go) through its unlisted task tools; nil:
	// they go to the go-sdk, which knows none.
	Kernel *tools.Kernel
	// Draining closes when the replica drains: task notification streams end then (the host
	// listens again, on another replica); nil never.
	Draining <-chan struct{}
}

// sessionHeader is the MCP session header; protocolHeader names the revision of a request.
const (
	sessionHeader  = "Mcp-Session-Id"
	protocolHeader = "Mcp-Protocol-Version"
	// statelessRevision is the first revision without sessions.
	statelessRevision = "2026-07-28"
)

// SessionID returns the session id generator of a replica named replica: its name, a dot,
// and 26 random characters. The name is what a load balancer routes on (ReplicaName).
func SessionID(replica string) func() string {
	return func() string { return replica + "." + rand.Text() }
}

// ReplicaName makes a host name usable in a session id and in a proxy's pattern: letters,
// digits and hyphens, at most 63 of them.
func ReplicaName(host string) string {
	var b strings.Builder
	for _, r := range host {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
		if b.Len() == 63 {
			break
		}
	}
	if b.Len() == 0 {
		return "replica"
	}
	return b.String()
}

// Door serves /mcp: statelessly, and with a session for the hosts that need one.
type Door struct {
	srv       *mcp.Server
	stateless http.Handler
	stateful  http.Handler
	auth      tools.Authenticator
	kernel    *tools.Kernel
	limits    SessionLimits
	log       *slog.Logger
	now       func() time.Time
	draining  <-chan struct{}

	mu     sync.Mutex
	live   map[string]*liveSession // by session id
	perKey map[string]int          // live sessions by principal
	opened int                     // sessions being opened (counted against the caps)
	closed bool
	stop   chan struct{}
	done   chan struct{}
}

type liveSession struct {
	principal string
	cred      string // the hash of the credential last seen on it
	lastUsed  time.Time
	inFlight  int
	tasks     bool // its initialize declared the Tasks extension
}

// HTTPHandler serves srv over Streamable HTTP with JSON responses, taking the host's
// toolsets from X-MCP-Toolsets or ?toolsets=. Bodies reach the go-sdk as sent: serve it
// behind a check of CheckMessage (the app's front does this). Close ends its sessions.
func HTTPHandler(srv *mcp.Server, o HTTPOptions) *Door {
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	d := &Door{
		srv: srv,
		stateless: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
			&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true, Logger: log}),
		// Server-sent events on a session: the elicitation travels on the call's own stream.
		stateful: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
			&mcp.StreamableHTTPOptions{Logger: log}),
		auth: o.Auth, kernel: o.Kernel, limits: o.Sessions, log: log, now: time.Now, draining: o.Draining,
		live: map[string]*liveSession{}, perKey: map[string]int{},
		stop: make(chan struct{}), done: make(chan struct{}),
	}
	if d.auth == nil {
		d.limits = SessionLimits{}
	}
	go d.reap()
	return d
}

func (d *Door) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	jsonBodiesOnly(withToolsets(http.HandlerFunc(d.serve))).ServeHTTP(w, r)
}

func (d *Door) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost && d.kernel != nil && d.serveTasks(w, r) {
		return
	}
	if v := r.Header.Get(protocolHeader); v >= statelessRevision {
		d.stateless.ServeHTTP(w, r)
		return
	}
	if sid := r.Header.Get(sessionHeader); sid != "" {
		d.serveSession(w, r, sid)
		return
	}
	if r.Method == http.MethodPost {
		if s, ok := d.wantsSession(r); ok {
			d.open(w, r, s)
			return
		}
	}
	d.stateless.ServeHTTP(w, r)
}

// wantsSession reports whether r is an initialize on a revision before 2026-07-28 that
// declares form elicitation, with a credential that authenticates, and whose principal has
// room for another session; principal is who it is.
func (d *Door) wantsSession(r *http.Request) (s *liveSession, ok bool) {
	if d.limits.PerReplica <= 0 || d.limits.PerKey <= 0 {
		return nil, false
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxInitialize+1))
	r.Body = readCloser{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
	if err != nil || len(body) > maxInitialize {
		return nil, false
	}
	var msg struct {
		Method string `json:"method"`
		Params struct {
			ProtocolVersion string `json:"protocolVersion"`
			Capabilities    struct {
				Elicitation *struct {
					Form *struct{} `json:"form"`
					URL  *struct{} `json:"url"`
				} `json:"elicitation"`
				Extensions map[string]json.RawMessage `json:"extensions"`
			} `json:"capabilities"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &msg) != nil || msg.Method != "initialize" || msg.Params.ProtocolVersion >= statelessRevision {
		return nil, false
	}
	if e := msg.Params.Capabilities.Elicitation; e == nil || (e.Form == nil && e.URL != nil) {
		return nil, false
	}
	key, e := tools.KeyFromHeader(r.Header)
	if e != nil || key == "" {
		return nil, false
	}
	p, err := d.auth.Authenticate(r.Context(), key)
	if err != nil || p == nil {
		return nil, false
	}
	_, tasks := msg.Params.Capabilities.Extensions[TasksExtension]
	return &liveSession{principal: p.ID(), cred: tools.HashKey(key), tasks: tasks}, true
}

// sessionTasks reports whether session sid lives on this replica and whether its host
// declared the Tasks extension when it opened it.
func (d *Door) sessionTasks(sid string) (live, tasks bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.live[sid]
	return s != nil, s != nil && s.tasks
}

// maxInitialize bounds the initialize read to decide on a session; a longer one is served
// statelessly (no host sends one near it).
const maxInitialize = 64 << 10

// readCloser puts back what was read ahead of the rest of a body.
type readCloser struct {
	io.Reader
	io.Closer
}

// open serves an initialize on a new session s, if the caps leave room; else statelessly.
func (d *Door) open(w http.ResponseWriter, r *http.Request, s *liveSession) {
	d.mu.Lock()
	room := !d.closed && len(d.live)+d.opened < d.limits.PerReplica && d.perKey[s.principal] < d.limits.PerKey
	if room {
		d.opened++
		d.perKey[s.principal]++ // held while opening, so concurrent initializes cannot pass the cap
	}
	d.mu.Unlock()
	if !room {
		d.log.InfoContext(r.Context(), "mcp session not opened: at the cap; served statelessly", "principal", s.principal,
			"per_replica", d.limits.PerReplica, "per_key", d.limits.PerKey)
		d.stateless.ServeHTTP(w, r)
		return
	}
	// The session is known before its id reaches the host: the host's next request may come
	// before this one returns.
	rw := &opening{ResponseWriter: w, register: func(sid string) {
		d.mu.Lock()
		defer d.mu.Unlock()
		s.lastUsed, s.inFlight = d.now(), 1
		d.live[sid] = s
		d.opened-- // counted once: as live from here, not also as opening
	}}
	d.stateful.ServeHTTP(rw, r)
	d.mu.Lock()
	if rw.sid == "" {
		d.opened--
		d.release(s.principal)
		d.mu.Unlock()
		return
	}
	s.inFlight--
	s.lastUsed = d.now()
	closed := d.closed
	d.mu.Unlock()
	if closed || !d.exists(rw.sid) { // the initialize failed, or the door closed meanwhile
		d.closeSession(rw.sid)
	}
}

// opening registers a session when the go-sdk names it in its answer's headers.
type opening struct {
	http.ResponseWriter
	register func(sid string)
	sid      string
}

func (o *opening) WriteHeader(code int) {
	if o.sid == "" {
		if sid := o.Header().Get(sessionHeader); sid != "" && code < 300 {
			o.sid = sid
			o.register(sid)
		}
	}
	o.ResponseWriter.WriteHeader(code)
}

func (o *opening) Write(b []byte) (int, error) {
	if o.sid == "" {
		o.WriteHeader(http.StatusOK)
	}
	return o.ResponseWriter.Write(b)
}

func (o *opening) Flush() {
	if f, ok := o.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (o *opening) Unwrap() http.ResponseWriter { return o.ResponseWriter }

// exists reports whether the go-sdk still holds session sid (a failed initialize closes it).
func (d *Door) exists(sid string) bool {
	for ss := range d.srv.Sessions() {
		if ss.ID() == sid {
			return true
		}
	}
	return false
}

func (d *Door) release(principal string) {
	if d.perKey[principal]--; d.perKey[principal] <= 0 {
		delete(d.perKey, principal)
	}
}

// serveSession serves a request on session sid: only to the principal that opened it, and
// only while its credential authenticates.
func (d *Door) serveSession(w http.ResponseWriter, r *http.Request, sid string) {
	d.mu.Lock()
	s := d.live[sid]
	d.mu.Unlock()
	if s == nil {
		// Opened on another replica, or closed: the host initializes again (MCP spec).
		http.Error(w, "session not found: initialize again", http.StatusNotFound)
		return
	}
	if r.Method == http.MethodGet {
		// No standalone stream: a server request travels on the stream of the call it is
		// about, and a session holds no connection open between calls.
		w.Header().Set("Allow", "POST, DELETE")
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
		return
	}
	key, e := tools.KeyFromHeader(r.Header)
	if e == nil && key == "" {
		e = tools.Errorf(tools.CodeUnauthenticated, "a request on an MCP session carries the key that opened it; send it as x-api-key or Authorization: Bearer")
	}
	if e != nil {
		writeError(w, e)
		return
	}
	cred := tools.HashKey(key)
	p, err := d.auth.Authenticate(r.Context(), key)
	if err != nil {
		e = tools.Translate(err)
		d.mu.Lock()
		own := s.cred == cred
		d.mu.Unlock()
		if own && e.Code == tools.CodeUnauthenticated { // its own key, revoked: the session ends with it
			d.closeSession(sid)
		}
		writeError(w, e)
		return
	}
	if p.ID() != s.principal {
		// Not this principal's session: answered as if it did not exist.
		http.Error(w, "session not found: initialize again", http.StatusNotFound)
		return
	}
	d.mu.Lock()
	s.cred = cred // an OAuth host's refreshed token stands for the same grant
	s.inFlight++
	s.lastUsed = d.now()
	d.mu.Unlock()
	d.stateful.ServeHTTP(w, r)
	d.mu.Lock()
	s.inFlight--
	s.lastUsed = d.now()
	d.mu.Unlock()
	if r.Method == http.MethodDelete {
		d.forget(sid)
	}
}

func writeError(w http.ResponseWriter, e *tools.Error) {
	body, _ := json.Marshal(tools.Body{Error: e})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.Code.HTTPStatus())
	w.Write(body)
}

// closeSession ends session sid on the go-sdk and forgets it.
func (d *Door) closeSession(sid string) {
	for ss := range d.srv.Sessions() {
		if ss.ID() == sid {
			ss.Close()
		}
	}
	d.forget(sid)
}

func (d *Door) forget(sid string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if s, ok := d.live[sid]; ok {
		delete(d.live, sid)
		d.release(s.principal)
	}
}

// reap closes sessions idle for longer than the limit, and forgets those the go-sdk closed.
func (d *Door) reap() {
	defer close(d.done)
	every := d.limits.Idle / 4
	if every <= 0 || every > time.Minute {
		every = time.Minute
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-d.stop:
			return
		case <-t.C:
			d.reapOnce()
		}
	}
}

func (d *Door) reapOnce() {
	held := map[string]bool{}
	for ss := range d.srv.Sessions() {
		held[ss.ID()] = true
	}
	now := d.now()
	var idle []string
	d.mu.Lock()
	for sid, s := range d.live {
		switch {
		case !held[sid]:
			delete(d.live, sid)
			d.release(s.principal)
		case s.inFlight == 0 && d.limits.Idle > 0 && now.Sub(s.lastUsed) >= d.limits.Idle:
			idle = append(idle, sid)
		}
	}
	d.mu.Unlock()
	for _, sid := range idle {
		d.closeSession(sid)
	}
}

// Live returns how many sessions this replica holds.
func (d *Door) Live() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.live)
}

// Close ends every session (a replica shutting down): a host on one initializes again on
// another replica. Requests after it are served statelessly.
func (d *Door) Close() {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return
	}
	d.closed = true
	close(d.stop)
	var sids []string
	for sid := range d.live {
		sids = append(sids, sid)
	}
	d.mu.Unlock()
	<-d.done
	for _, sid := range sids {
		d.closeSession(sid)
	}
}
