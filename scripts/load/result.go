package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/switchboard-hq/switchboard/signing"
)

// sideResult is one side's figures, per round.
type sideResult struct {
	Name    string               `json:"name"`
	P50us   []float64            `json:"p50Us"`           // one caller, alone
	AddedUs []float64            `json:"addedP50Us"`      // p50 minus the direct call's, same round
	PerSec  []float64            `json:"callsPerSecond"`  // under -callers
	P99ms   []float64            `json:"p99Ms"`           // under -callers
	Failed  []int64              `json:"failedUnderLoad"` // in each window
	CPU     map[string][]float64 `json:"cpuUsPerCall"`    // by process, under load
	First   string               `json:"firstFailure,omitempty"`
}

// result is a run's figures: medians of the rounds, and the ratios invoke ÷ relay.
type result struct {
	Options map[string]any `json:"options"`
	Loadavg []string       `json:"loadavg"` // at each round's start, and at the end
	Sides   []*sideResult  `json:"sides"`   // direct, invoke, relay
	Ratios  struct {
		AddedP50 float64 `json:"addedP50"` // invoke's added p50 ÷ the relay's (goal ≤ 1.2)
		PerSec   float64 `json:"callsPerSecond"`
		P99      float64 `json:"p99"`
		CPU      float64 `json:"cpuPerCall"` // the serving process's CPU per call, invoke ÷ relay
	} `json:"ratios"`
	Counts struct {
		InvokeOK       int64 `json:"invokeOk"`
		InvokeFailed   int64 `json:"invokeFailed"`
		RelayOK        int64 `json:"relayOk"`
		RelayFailed    int64 `json:"relayFailed"`
		InvocationRows int64 `json:"invocationRows"` // Switchboard's invocations of the intent
		RelayRows      int64 `json:"relayRows"`      // the relay's bench_calls
	} `json:"counts"`
}

const direct, invoke, relay = 0, 1, 2

// measure warms every side, then runs the interleaved rounds: the sides alone, call by call,
// then each under load (invoke first in odd rounds, the relay first in even ones).
func (h *harness) measure(ctx context.Context) (*result, error) {
	key, _, err := signing.LoadOrCreatePrivateKey(h.keyFile)
	if err != nil {
		return nil, err
	}
	directTr, err := partnerTransport(h.caFile)
	if err != nil {
		return nil, err
	}
	signer := signing.NewSigner(key)
	d := &door{base: h.service, keys: h.keys, mcp: h.o.door == "mcp", idem: h.o.idem, client: callerClient(h.o.callers, h.o.keepAlive)}
	relayClient := callerClient(h.o.callers, h.o.keepAlive)
	sides := []*side{
		{name: "direct", call: func(ctx context.Context, _ int) error { return directCall(ctx, signer, directTr, h.proxy+"/free") }},
		{name: "invoke", call: d.invoke},
		{name: "relay", call: func(ctx context.Context, _ int) error { return post(ctx, relayClient, h.relayURL, invokeBody) }},
	}
	res := h.newResult(sides)
	for i := range h.keys { // every account's first call opens its budget lease
		if err := sides[invoke].do(ctx, i); err != nil {
			return nil, err
		}
	}
	if _, err := alone(ctx, sides, 20); err != nil {
		return nil, err
	}
	for _, k := range []int{invoke, relay} {
		load(ctx, sides[k], h.o.callers, time.Second, h.meters)
	}
	for r := range h.o.rounds {
		res.Loadavg = append(res.Loadavg, loadavg())
		fmt.Fprintf(h.log, "load: round %d of %d, load average %s\n", r+1, h.o.rounds, loadavg())
		took, err := alone(ctx, sides, h.o.alone)
		if err != nil {
			return nil, err
		}
		for k, s := range res.Sides {
			s.P50us = append(s.P50us, us(took[k][len(took[k])/2]))
			s.AddedUs = append(s.AddedUs, us(took[k][len(took[k])/2]-took[direct][len(took[direct])/2]))
		}
		order := []int{invoke, relay}
		if r%2 == 1 {
			order = []int{relay, invoke}
		}
		for _, k := range order {
			h.loadRound(ctx, sides[k], res.Sides[k])
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	res.Loadavg = append(res.Loadavg, loadavg())
	for k, s := range sides {
		if e := s.first.Load(); e != nil && res.Sides[k].First == "" {
			res.Sides[k].First = (*e).Error()
		}
	}
	res.Counts.InvokeOK, res.Counts.InvokeFailed = sides[invoke].ok.Load(), sides[invoke].failed.Load()
	res.Counts.RelayOK, res.Counts.RelayFailed = sides[relay].ok.Load(), sides[relay].failed.Load()
	res.ratios()
	return res, nil
}

// loadRound runs one side's load window of a round and records it.
func (h *harness) loadRound(ctx context.Context, s *side, out *sideResult) {
	w := load(ctx, s, h.o.callers, h.o.loadFor, h.meters)
	out.PerSec = append(out.PerSec, w.perSec)
	out.P99ms = append(out.P99ms, float64(w.p99)/float64(time.Millisecond))
	out.Failed = append(out.Failed, w.failed)
	for p, used := range w.cpu {
		out.CPU[p] = append(out.CPU[p], us(used)/float64(max(1, w.calls+w.failed)))
	}
	if w.first != nil && out.First == "" {
		out.First = w.first.Error()
	}
	fmt.Fprintf(h.log, "load:   %-6s %6.0f calls/s, p99 %6.1f ms, %d failed\n", s.name, w.perSec, float64(w.p99)/float64(time.Millisecond), w.failed)
}

func (h *harness) newResult(sides []*side) *result {
	res := &result{Options: map[string]any{"callers": h.o.callers, "accounts": h.o.accounts, "rounds": h.o.rounds, "for": h.o.loadFor.String(),
		"alone": h.o.alone, "delay": h.o.delay.String(), "door": h.o.door, "idem": h.o.idem, "keepalive": h.o.keepAlive,
		"target": h.o.target, "logLevel": h.o.logLevel}}
	for _, s := range sides {
		res.Sides = append(res.Sides, &sideResult{Name: s.name, CPU: map[string][]float64{}})
	}
	return res
}

// meters reads the CPU every process of the run has used: Switchboard's (serve, or this
// process with -target inproc), the relay's, the partner's with its proxy, the harness's (the
// callers) and the run's database's PostgreSQL backends.
func (h *harness) meters() map[string]time.Duration {
	self := os.Getpid()
	service := self
	if h.serve != nil {
		service = h.serve.cmd.Process.Pid
	}
	m := map[string]time.Duration{"switchboard": cpuOf(service), "relay": cpuOf(h.relay.cmd.Process.Pid),
		"partner": cpuOf(h.partner.cmd.Process.Pid), "postgres": h.backendsCPU()}
	if service != self {
		m["harness"] = cpuOf(self)
	}
	return m
}

// backendsCPU is the CPU used so far by the PostgreSQL backends connected to the run's
// database (the server is on this machine; it is shared with other databases).
func (h *harness) backendsCPU() time.Duration {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var pids []int
	if err := h.db.admin.DB().NewRaw("SELECT pid FROM pg_stat_activity WHERE datname = ?", h.db.name).Scan(ctx, &pids); err != nil {
		return 0
	}
	var sum time.Duration
	for _, pid := range pids {
		sum += cpuOf(pid)
	}
	return sum
}

// ratios are the goals' ratios, invoke ÷ relay, each of the two sides' medians.
func (r *result) ratios() {
	inv, rel := r.Sides[invoke], r.Sides[relay]
	r.Ratios.AddedP50 = median(inv.AddedUs) / median(rel.AddedUs)
	r.Ratios.PerSec = median(inv.PerSec) / median(rel.PerSec)
	r.Ratios.P99 = median(inv.P99ms) / median(rel.P99ms)
	r.Ratios.CPU = median(inv.CPU["switchboard"]) / median(rel.CPU["relay"])
}

// print writes the figures as a table, the medians first and every round after.
func (r *result) print(w io.Writer) {
	fmt.Fprintf(w, "options: %v\nload average at each round and at the end: %s\n\n", r.Options, strings.Join(r.Loadavg, " | "))
	fmt.Fprintf(w, "%-7s %9s %9s %9s %9s  %s\n", "side", "p50 µs", "added µs", "calls/s", "p99 ms", "CPU µs per call under load, by process")
	for _, s := range r.Sides {
		var cpu []string
		for _, p := range []string{"switchboard", "relay", "partner", "harness", "postgres"} {
			if v, ok := s.CPU[p]; ok {
				cpu = append(cpu, fmt.Sprintf("%s %.0f", p, median(v)))
			}
		}
		fmt.Fprintf(w, "%-7s %9.0f %9.0f %9.0f %9.1f  %s\n", s.Name, median(s.P50us), median(s.AddedUs), median(s.PerSec), median(s.P99ms), strings.Join(cpu, ", "))
	}
	fmt.Fprintf(w, "\ninvoke ÷ relay: added p50 %.2f (goal ≤ 1.2), calls/s %.2f (≥ 0.9), p99 %.2f (≤ 1.25), serving process's CPU per call %.2f\n",
		r.Ratios.AddedP50, r.Ratios.PerSec, r.Ratios.P99, r.Ratios.CPU)
	fmt.Fprintf(w, "\nper round:\n")
	for _, s := range r.Sides {
		fmt.Fprintf(w, "  %-7s p50 %.0f, added %.0f, calls/s %.0f, p99 ms %.1f, failed %v\n", s.Name, s.P50us, s.AddedUs, s.PerSec, s.P99ms, s.Failed)
		if s.First != "" {
			fmt.Fprintf(w, "          first failure: %.200s\n", s.First)
		}
	}
	c := r.Counts
	fmt.Fprintf(w, "\ncalls answered: invoke %d (%d failed), relay %d (%d failed); rows: invocations %d, relay %d\n",
		c.InvokeOK, c.InvokeFailed, c.RelayOK, c.RelayFailed, c.InvocationRows, c.RelayRows)
}
