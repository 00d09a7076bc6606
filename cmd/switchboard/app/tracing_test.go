package app_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"go.opentelemetry.io/otel"

	"github.com/switchboard-hq/switchboard/cmd/switchboard/app"
)

// Without an OTLP endpoint tracing stays off (the global provider is left alone), and an OTLP
// protocol the build does not carry is refused at start rather than exporting nowhere.
func TestStartTracingSettings(t *testing.T) {
	before := otel.GetTracerProvider()
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	stop, err := app.StartTracing(context.Background(), env(nil), slog.Default())
	if err != nil || otel.GetTracerProvider() != before {
		t.Fatalf("no endpoint: %v; the provider changed: %v", err, otel.GetTracerProvider() != before)
	}
	if err := stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, err = app.StartTracing(context.Background(), env(map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}), slog.Default())
	if err == nil || !strings.Contains(err.Error(), "http/protobuf") || otel.GetTracerProvider() != before {
		t.Fatalf("grpc protocol: %v, want a refusal naming http/protobuf and no provider installed", err)
	}
}
