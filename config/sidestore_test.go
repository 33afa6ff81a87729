package config_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/config"
)

func TestParseS3(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want string // canonical String(), or the error's text
		base string
		err  bool
	}{
		{in: "s3://bucket?host=gw1", want: "s3://bucket?endpoint=https%3A%2F%2Fs3.us-east-1.amazonaws.com&host=gw1&region=us-east-1", base: "gw1/"},
		{in: "s3://my.bucket-1/bs/fleet/?region=eu-west-3&host=GW-2", err: true, want: `expected host= of up to 63 lower-case letters`},
		{in: "s3://my.bucket-1/bs/fleet/?region=eu-west-3&host=gw-2", want: "s3://my.bucket-1/bs/fleet?endpoint=https%3A%2F%2Fs3.eu-west-3.amazonaws.com&host=gw-2&region=eu-west-3", base: "bs/fleet/gw-2/"},
		{in: "s3://b1b/p?endpoint=http://127.0.0.1:7070&host=h&timeout=2s&path_style=0", want: "s3://b1b/p?endpoint=http%3A%2F%2F127.0.0.1%3A7070&host=h&region=us-east-1", base: "p/h/"},
		{in: "gs://bucket", err: true, want: `expected the scheme s3://`},
		{in: "s3://AB", err: true, want: `expected a bucket name of 3 to 63 lower-case letters, digits, '.' and '-', found "AB"`},
		{in: "s3://a..b", err: true, want: `found "a..b"`},
		{in: "s3://bucket:9000/p", err: true, want: `give the server as ?endpoint=http://host:port`},
		{in: "s3://key:secret@bucket/p", err: true, want: `credentials never go in the config`},
		{in: "s3://bucket/p?secret_access_key=x", err: true, want: `credentials never go in the config (found the parameter "secret_access_key")`},
		{in: "s3://bucket/p?endpoint=http://k:s@host", err: true, want: `credentials never go in the config (found them in the endpoint)`},
		{in: "s3://bucket/p?endpoint=ftp://host", err: true, want: `expected endpoint=http://host[:port] or https://host[:port], found "ftp://host"`},
		{in: "s3://bucket/p?endpoint=http://host/path", err: true, want: `expected an endpoint of a scheme and a host only`},
		{in: "s3://bucket/p?colour=red&size=1", err: true, want: `unknown parameter colour, size (expected endpoint, region, host, path_style, timeout, iam)`},
		{in: "s3://bucket/../x", err: true, want: `expected a prefix of names`},
		{in: "s3://bucket/a b", err: true, want: `expected a prefix of names`},
		{in: "s3://bucket?timeout=1y", err: true, want: `expected a timeout such as 30s, between 100ms and 1h, found "1y"`},
		{in: "s3://bucket?timeout=10ms", err: true, want: `between 100ms and 1h`},
		{in: "s3://bucket?region=Mars%201", err: true, want: `expected a region such as us-east-1`},
		{in: "s3://bucket?host=a&host=b", err: true, want: `the parameter host is given 2 times, expected once`},
		{in: "s3://bucket?path_style=maybe", err: true, want: `expected path_style=1 or path_style=0, found "maybe"`},
	} {
		t.Run(tt.in, func(t *testing.T) {
			l, err := config.ParseS3(tt.in)
			if tt.err {
				if !errors.Is(err, bs.ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("ParseS3(%q) = %v, want ErrInvalid saying %q", tt.in, err, tt.want)
				}
				for _, secret := range []string{":secret@", "=x", "k:s@"} {
					if strings.Contains(err.Error(), secret) {
						t.Errorf("the error shows a credential: %v", err)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if l.String() != tt.want || l.Base() != tt.base {
				t.Errorf("ParseS3(%q) = %s base %s, want %s base %s", tt.in, l, l.Base(), tt.want, tt.base)
			}
			if again, err := config.ParseS3(l.String()); err != nil || again.String() != l.String() {
				t.Errorf("the canonical form does not parse to itself: %v, %v", again, err)
			}
		})
	}
	l, err := config.ParseS3("s3://bucket/p?endpoint=http://127.0.0.1:7070&host=h&timeout=2s&path_style=0&iam=1")
	if err != nil || l.PathStyle || !l.IAM || l.Timeout != 2*time.Second {
		t.Errorf("options: %+v, %v", l, err)
	}
	if l, err := config.ParseS3("s3://bucket?host=h"); err != nil || l.PathStyle || l.Timeout != config.DefaultS3Timeout {
		t.Errorf("AWS defaults: %+v, %v", l, err)
	}
}

func TestHostName(t *testing.T) {
	for in, want := range map[string]string{"GW1.example.com": "gw1", "my_host": "my_host", "Ünïcode-box": "ncode-box", "-x": "x", "...": ""} {
		if got := config.HostName(in); got != want {
			t.Errorf("HostName(%q) = %q, want %q", in, got, want)
		}
	}
}
