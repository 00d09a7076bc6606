package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// StartTracing installs OpenTelemetry tracing when the standard OTEL_EXPORTER_OTLP_ENDPOINT
// (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set: spans go over OTLP/HTTP (protobuf) to that
// collector, the W3C traceparent of callers is honoured and passed on to partners. The
// exporter reads the other OTEL_* settings itself (headers, timeout, TLS), the SDK reads
// OTEL_TRACES_SAMPLER and OTEL_RESOURCE_ATTRIBUTES. Unset, tracing is off: no spans, no
// propagation. The returned function flushes and stops the exporter.
func StartTracing(ctx context.Context, getenv func(string) string, log *slog.Logger) (func(context.Context) error, error) {
	endpoint := getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
	if endpoint == "" {
		endpoint = getenv("OTEL_EXPORTER_OTLP_ENDPOINT")
	}
	if endpoint == "" || getenv("OTEL_SDK_DISABLED") == "true" {
		return func(context.Context) error { return nil }, nil
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if p := getenv(name); p != "" && p != "http/protobuf" {
			return nil, fmt.Errorf("%s=%q: Switchboard exports traces over http/protobuf only; unset it or set http/protobuf (a collector's port 4318)", name, p)
		}
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_ENDPOINT=%q: %w", endpoint, err)
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(
		attribute.String("service.name", "switchboard"), attribute.String("service.version", Version)))
	if err == nil {
		res, err = resource.Merge(res, resource.Environment()) // OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES win
	}
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("trace resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.TraceContext{})
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { log.Warn("tracing", "err", err) }))
	log.Info("tracing on: spans exported over OTLP/HTTP", "endpoint", endpoint)
	return tp.Shutdown, nil
}
