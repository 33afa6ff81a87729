package brainsurgeon_test

import (
	"io"
	"log/slog"
	"testing"

	bs "github.com/brainsurgeon/brainsurgeon"
)

type plainLogger struct{ bs.Logger }

func TestDebugEnabled(t *testing.T) {
	var nilSlog *slog.Logger
	for _, tc := range []struct {
		name string
		l    bs.Logger
		want bool
	}{
		{"Nil", nil, false},
		{"NilSlog", nilSlog, false},
		{"Discard", bs.DiscardLogger(), false},
		{"SlogInfo", slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo})), false},
		{"SlogDebug", slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelDebug})), true},
		{"NoEnabledMethod", plainLogger{bs.DiscardLogger()}, true},
	} {
		if got := bs.DebugEnabled(tc.l); got != tc.want {
			t.Errorf("%s: DebugEnabled = %v, want %v", tc.name, got, tc.want)
		}
	}
}
