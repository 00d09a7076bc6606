// Package tracing is Switchboard's OpenTelemetry span helpers: the spans of a tool call (the
// call itself, auth, billing, each partner attempt, the batch commit) start here, from the
// global tracer provider the app installs when OTEL_EXPORTER_OTLP_ENDPOINT is set. With
// none installed every span is a no-op costing a few nanoseconds.
package tracing

import (
	"context"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Name is the instrumentation scope of every span.
const Name = "github.com/switchboard-hq/switchboard"

// The global provider's tracer, looked up once: it delegates to the provider the app installs
// later (a lookup per span would take the global provider's lock on every call).
var global = otel.Tracer(Name)

func tracer() trace.Tracer { return global }

// Call starts the span of one tool call, a server span: its parent is the caller's W3C
// traceparent when one came (the front extracts it into ctx).
func Call(ctx context.Context, tool string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	return tracer().Start(ctx, "tool "+tool, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(append(attrs, attribute.String("switchboard.tool", tool))...))
}

// Child starts a span under the one in ctx, and only there: work outside a traced call (the
// batch writer's own loop, the sweeper) makes no root spans of its own.
func Child(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	parent := trace.SpanFromContext(ctx)
	if !parent.SpanContext().IsValid() {
		return ctx, parent // the no-op (or non-recording) span already in ctx
	}
	return tracer().Start(ctx, name, trace.WithAttributes(attrs...))
}

// Client is Child for a call to another service (a partner).
func Client(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if !trace.SpanFromContext(ctx).SpanContext().IsValid() {
		return ctx, trace.SpanFromContext(ctx)
	}
	return tracer().Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
}

// End ends span, marking it failed when err is not nil.
func End(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// Committed wraps the done callback of a batch writer job queued for the call in ctx: when
// it runs, a span named name records the time from now (the job queued) to then (its batch
// committed, or failed to). The span is made only when done runs, so a job replaced before
// its batch leaves nothing behind. done may be nil.
func Committed(ctx context.Context, name string, done func(error)) func(error) {
	if !trace.SpanFromContext(ctx).SpanContext().IsValid() {
		if done == nil {
			return func(error) {}
		}
		return done
	}
	queued := time.Now()
	return func(err error) {
		_, span := tracer().Start(ctx, name, trace.WithTimestamp(queued))
		End(span, err)
		if done != nil {
			done(err)
		}
	}
}
