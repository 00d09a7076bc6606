package tracing_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/tools/tracing"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// The helpers make spans only under a traced call: a tool call is a server span, its children
// hang under it, an error marks a span failed, and a batch commit's span starts when the job
// was queued. Outside a call nothing is recorded.
func TestSpans(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	otel.SetTracerProvider(tp) // the package's tracer delegates to the global provider
	t.Cleanup(func() { tp.Shutdown(context.Background()) })

	// Outside a call: no root spans, and Committed hands back done itself.
	ctx, span := tracing.Child(context.Background(), "billing.reserve")
	tracing.End(span, nil)
	if _, s := tracing.Client(ctx, "partner"); s.SpanContext().IsValid() {
		t.Fatal("a client span outside a call")
	}
	called := false
	tracing.Committed(ctx, "batch.commit", func(error) { called = true })(nil)
	if !called || len(rec.Ended()) != 0 {
		t.Fatalf("outside a call: done called %v, %d spans recorded", called, len(rec.Ended()))
	}

	ctx, call := tracing.Call(context.Background(), "invoke_partner_message")
	_, child := tracing.Child(ctx, "billing.reserve")
	tracing.End(child, errors.New("no credit"))
	_, client := tracing.Client(ctx, "partner.call")
	tracing.End(client, nil)
	done := tracing.Committed(ctx, "batch.commit", nil)
	queued := time.Now()
	time.Sleep(2 * time.Millisecond)
	done(nil)
	tracing.End(call, nil)

	byName := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		byName[s.Name()] = s
	}
	root := byName["tool invoke_partner_message"]
	if root == nil || root.SpanKind() != trace.SpanKindServer {
		t.Fatalf("the call's span: %v", byName)
	}
	for _, name := range []string{"billing.reserve", "partner.call", "batch.commit"} {
		s := byName[name]
		if s == nil || s.Parent().SpanID() != root.SpanContext().SpanID() {
			t.Fatalf("%s is not under the call: %v", name, s)
		}
	}
	if s := byName["billing.reserve"]; s.Status().Code != codes.Error || s.Status().Description != "no credit" {
		t.Fatalf("a failed child: %v", s.Status())
	}
	if byName["partner.call"].SpanKind() != trace.SpanKindClient {
		t.Fatal("the partner call is not a client span")
	}
	if c := byName["batch.commit"]; c.StartTime().After(queued) {
		t.Fatalf("the commit span starts at %v, after the job was queued at %v", c.StartTime(), queued)
	}
}
