package config

import (
	"fmt"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/brainsurgeon/brainsurgeon"
)

// S3Location is a parsed side_store setting of an object store: where in which object store
// the side values of this host are kept. It holds no credentials: they
// come from the environment or the AWS files (sides3.Credentials).
type S3Location struct {
	// Bucket is the bucket's name.
	Bucket string
	// Prefix is the key prefix inside the bucket, without a leading or
	// trailing '/'; it may be empty.
	Prefix string
	// Endpoint is the service's URL, scheme and host (and port) only:
	// "https://s3.us-east-1.amazonaws.com" unless the setting names one.
	Endpoint *url.URL
	// Region is the bucket's region: "us-east-1" unless the setting
	// names one.
	Region string
	// Host is the per-host part of every key, so that several hosts may
	// share a bucket: the machine's host name unless the setting names one.
	Host string
	// PathStyle addresses the bucket in the path rather than in the host
	// name: the default for an endpoint other than AWS's.
	PathStyle bool
	// Timeout bounds each request (a PUT gets one more second for each
	// megabyte it sends): DefaultS3Timeout unless the setting names
	// another.
	Timeout time.Duration
	// IAM lets the credentials come from the instance's metadata service
	// (EC2, ECS) when neither the environment nor the AWS files hold any.
	IAM bool
}

// DefaultS3Timeout is the request timeout of a setting that names none.
const DefaultS3Timeout = 30 * time.Second

// params are the query parameters a side_store URL may carry.
var params = []string{"endpoint", "region", "host", "path_style", "timeout", "iam"}

// secretParams are parameters refused because they would put a
// credential into the configuration file.
var secretParams = []string{"access_key", "access_key_id", "secret", "secret_key", "secret_access_key", "token", "session_token", "password"}

var (
	bucketName = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)
	hostName   = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)
	prefixPart = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)
)

// ParseS3 parses a side_store setting of the form
//
//	s3://BUCKET[/PREFIX][?endpoint=URL&region=R&host=H&path_style=1&timeout=30s&iam=1]
//
// Every mistake is an error wrapping brainsurgeon.ErrInvalid that says
// what was expected and what was found. A setting that carries a
// credential is refused: credentials never go in the configuration.
func ParseS3(s string) (S3Location, error) {
	var loc S3Location
	bad := func(format string, args ...any) (S3Location, error) {
		return S3Location{}, fmt.Errorf("side_store %q: "+format+": %w", append([]any{redact(s)}, append(args, brainsurgeon.ErrInvalid)...)...)
	}
	u, err := url.Parse(s)
	if err != nil {
		return bad("expected s3://bucket/prefix?endpoint=…, found a string that is not a URL")
	}
	if u.Scheme != "s3" {
		return bad("expected the scheme s3:// (or \"local\" for the pack store beside the transcripts), found %q", u.Scheme+"://")
	}
	q := u.Query()
	if u.User != nil {
		return bad("credentials never go in the config: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or a profile in ~/.aws/credentials")
	}
	for k := range q {
		if slices.Contains(secretParams, strings.ToLower(k)) {
			return bad("credentials never go in the config (found the parameter %q): set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or a profile in ~/.aws/credentials", k)
		}
	}
	var unknown []string
	for k := range q {
		if !slices.Contains(params, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return bad("unknown parameter %s (expected %s)", strings.Join(unknown, ", "), strings.Join(params, ", "))
	}
	for k, v := range q {
		if len(v) > 1 {
			return bad("the parameter %s is given %d times, expected once", k, len(v))
		}
	}
	loc.Bucket = u.Host
	if u.Port() != "" {
		return bad("the bucket is not a host: give the server as ?endpoint=http://host:port, found the port %q after the bucket", u.Port())
	}
	if !bucketName.MatchString(loc.Bucket) || strings.Contains(loc.Bucket, "..") {
		return bad("expected a bucket name of 3 to 63 lower-case letters, digits, '.' and '-', found %q", loc.Bucket)
	}
	loc.Prefix = strings.Trim(u.Path, "/")
	if loc.Prefix != "" {
		for _, part := range strings.Split(loc.Prefix, "/") {
			if !prefixPart.MatchString(part) || part == "." || part == ".." {
				return bad("expected a prefix of names of letters, digits, '.', '_' and '-' separated by '/', found %q", loc.Prefix)
			}
		}
	}
	loc.Region = q.Get("region")
	if loc.Region == "" {
		loc.Region = "us-east-1"
	} else if !regexp.MustCompile(`^[a-z0-9-]{2,32}$`).MatchString(loc.Region) {
		return bad("expected a region such as us-east-1, found %q", loc.Region)
	}
	if e := q.Get("endpoint"); e != "" {
		ep, err := url.Parse(e)
		switch {
		case err != nil || (ep.Scheme != "http" && ep.Scheme != "https") || ep.Host == "":
			return bad("expected endpoint=http://host[:port] or https://host[:port], found %q", e)
		case ep.User != nil:
			return bad("credentials never go in the config (found them in the endpoint): set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or a profile in ~/.aws/credentials")
		case strings.Trim(ep.Path, "/") != "" || ep.RawQuery != "" || ep.Fragment != "":
			return bad("expected an endpoint of a scheme and a host only, found the path or query in %q", e)
		}
		loc.Endpoint = &url.URL{Scheme: ep.Scheme, Host: ep.Host}
		loc.PathStyle = true
	} else {
		loc.Endpoint = &url.URL{Scheme: "https", Host: "s3." + loc.Region + ".amazonaws.com"}
	}
	if v := q.Get("path_style"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return bad("expected path_style=1 or path_style=0, found %q", v)
		}
		loc.PathStyle = b
	}
	if v := q.Get("iam"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return bad("expected iam=1 or iam=0, found %q", v)
		}
		loc.IAM = b
	}
	loc.Timeout = DefaultS3Timeout
	if v := q.Get("timeout"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 100*time.Millisecond || d > time.Hour {
			return bad("expected a timeout such as 30s, between 100ms and 1h, found %q", v)
		}
		loc.Timeout = d
	}
	loc.Host = q.Get("host")
	if loc.Host == "" {
		h, err := os.Hostname()
		if err != nil {
			return bad("no host= given and the machine's host name cannot be read (%v): give host=NAME", err)
		}
		loc.Host = HostName(h)
		if loc.Host == "" {
			return bad("no host= given and the machine's host name %q has no letter or digit: give host=NAME", h)
		}
	}
	if !hostName.MatchString(loc.Host) || loc.Host == "." || loc.Host == ".." {
		return bad("expected host= of up to 63 lower-case letters, digits, '.', '_' and '-', found %q", loc.Host)
	}
	return loc, nil
}

// HostName returns a machine's host name as a key part of an object
// store: its first label,
// lower-cased, with every character outside [a-z0-9._-] dropped.
func HostName(h string) string {
	h, _, _ = strings.Cut(strings.ToLower(h), ".")
	var b strings.Builder
	for _, r := range h {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-' {
			b.WriteRune(r)
		}
	}
	return strings.TrimLeft(b.String(), "_-")
}

// redact returns a setting with anything that may be a credential cut
// out, for error messages.
func redact(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		if i := strings.IndexAny(s, "@?"); i >= 0 {
			return s[:i] + "…"
		}
		return s
	}
	if u.User != nil {
		u.User = url.User("REDACTED")
	}
	q := u.Query()
	for k := range q {
		if slices.Contains(secretParams, strings.ToLower(k)) {
			q.Set(k, "REDACTED")
		}
	}
	if e, err := url.Parse(q.Get("endpoint")); err == nil && e.User != nil {
		e.User = url.User("REDACTED")
		q.Set("endpoint", e.String())
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// String returns the setting in its canonical form, with every default
// spelt out: s3://bucket/prefix?endpoint=…&region=…&host=….
func (l S3Location) String() string {
	u := url.URL{Scheme: "s3", Host: l.Bucket}
	if l.Prefix != "" {
		u.Path = "/" + l.Prefix
	}
	q := url.Values{}
	q.Set("endpoint", l.Endpoint.String())
	q.Set("region", l.Region)
	q.Set("host", l.Host)
	u.RawQuery = q.Encode()
	return u.String()
}

// Base returns the key prefix of this host's values: "prefix/host/".
func (l S3Location) Base() string {
	if l.Prefix == "" {
		return l.Host + "/"
	}
	return l.Prefix + "/" + l.Host + "/"
}

// Where returns the place of this host's values for people: s3://bucket/prefix/host.
func (l S3Location) Where() string {
	return "s3://" + l.Bucket + "/" + strings.TrimSuffix(l.Base(), "/")
}
