package sides3

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/config"
)

// Credentials returns the credentials for l and says where they come
// from, in the order the AWS tools use: the environment
// (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, with AWS_SESSION_TOKEN),
// then the shared credentials file (AWS_SHARED_CREDENTIALS_FILE or
// ~/.aws/credentials, the profile AWS_PROFILE or "default"), then, only
// with iam=1, the instance's metadata service. None found is an error
// wrapping brainsurgeon.ErrInvalid that says how to give them. The
// secret itself never appears in an error.
func Credentials(l config.S3Location) (*credentials.Credentials, string, error) {
	if os.Getenv("AWS_ACCESS_KEY_ID") != "" || os.Getenv("AWS_SECRET_ACCESS_KEY") != "" {
		if os.Getenv("AWS_ACCESS_KEY_ID") == "" || os.Getenv("AWS_SECRET_ACCESS_KEY") == "" {
			return nil, "", fmt.Errorf("side store %s: the environment sets only one of AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, expected both: %w", l.Where(), bs.ErrInvalid)
		}
		return credentials.NewEnvAWS(), "the environment (AWS_ACCESS_KEY_ID)", nil
	}
	file := os.Getenv("AWS_SHARED_CREDENTIALS_FILE")
	if file == "" {
		if home, err := os.UserHomeDir(); err == nil {
			file = filepath.Join(home, ".aws", "credentials")
		}
	}
	profile := os.Getenv("AWS_PROFILE")
	if profile == "" {
		profile = "default"
	}
	if file != "" {
		if _, err := os.Stat(file); err == nil {
			c := credentials.NewFileAWSCredentials(file, profile)
			v, err := c.GetWithContext(nil)
			if err == nil && v.AccessKeyID != "" {
				return c, fmt.Sprintf("the profile %q of %s", profile, file), nil
			}
			if err != nil && !l.IAM {
				return nil, "", fmt.Errorf("side store %s: the profile %q of %s gives no credentials: %v: %w", l.Where(), profile, file, err, bs.ErrInvalid)
			}
		}
	}
	if l.IAM {
		return credentials.NewIAM(""), "the instance's metadata service (iam=1)", nil
	}
	return nil, "", fmt.Errorf("side store %s: no credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or a profile in ~/.aws/credentials (AWS_PROFILE), or add iam=1 on EC2 or ECS: %w", l.Where(), bs.ErrInvalid)
}

// newClient returns a client of l's service with creds. transport, when
// not nil, carries every request (tests count them).
func newClient(l config.S3Location, creds *credentials.Credentials, transport http.RoundTripper) (*minio.Client, error) {
	lookup := minio.BucketLookupDNS
	if l.PathStyle {
		lookup = minio.BucketLookupPath
	}
	if transport == nil {
		t, err := minio.DefaultTransport(l.Endpoint.Scheme == "https")
		if err != nil {
			return nil, err
		}
		t.DialContext = (&net.Dialer{Timeout: min(l.Timeout, 10*time.Second), KeepAlive: 30 * time.Second}).DialContext
		t.ResponseHeaderTimeout = l.Timeout
		transport = t
	}
	c, err := minio.New(l.Endpoint.Host, &minio.Options{
		Creds:        creds,
		Secure:       l.Endpoint.Scheme == "https",
		Region:       l.Region,
		BucketLookup: lookup,
		Transport:    transport,
		MaxRetries:   3,
	})
	if err != nil {
		return nil, fmt.Errorf("side store %s: endpoint %s: %v: %w", l.Where(), l.Endpoint, err, bs.ErrInvalid)
	}
	return c, nil
}

// classify maps an error of a request about what (a key or the bucket)
// to the package's kinds: a missing object wraps fs.ErrNotExist; a
// missing bucket, refused credentials or a denied request wrap
// brainsurgeon.ErrInvalid (a setting to fix); an unreachable, slow or
// failing server wraps brainsurgeon.ErrUnavailable. A cancelled ctx is
// returned as it is.
func (m *medium) classify(ctx context.Context, op, what string, err error) error {
	if err == nil {
		return nil
	}
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return err
	}
	r := minio.ToErrorResponse(err)
	where := m.loc.Where()
	switch r.Code {
	case "NoSuchKey", "NotFound":
		return fmt.Errorf("%s %s: %w", op, m.describeKey(what), fs.ErrNotExist)
	case "NoSuchBucket":
		return fmt.Errorf("side store %s: the bucket %q does not exist at %s: %w", where, m.loc.Bucket, m.loc.Endpoint, bs.ErrInvalid)
	case "AccessDenied", "AllAccessDisabled", "AccountProblem":
		return fmt.Errorf("side store %s: the credentials from %s may not %s %s (%s): %w", where, m.credSource, op, m.describeKey(what), r.Message, bs.ErrInvalid)
	case "InvalidAccessKeyId", "SignatureDoesNotMatch", "InvalidToken", "ExpiredToken", "InvalidSecurity", "AuthorizationHeaderMalformed":
		return fmt.Errorf("side store %s: %s refused the credentials from %s (%s): %w", where, m.loc.Endpoint, m.credSource, r.Code, bs.ErrInvalid)
	case "InvalidBucketName", "InvalidArgument", "KeyTooLongError", "EntityTooLarge":
		return fmt.Errorf("side store %s: %s %s: %s: %w", where, op, m.describeKey(what), r.Message, bs.ErrInvalid)
	}
	if r.StatusCode == http.StatusNotFound && r.Code == "" {
		return fmt.Errorf("%s %s: %w", op, m.describeKey(what), fs.ErrNotExist)
	}
	if r.StatusCode == http.StatusForbidden {
		return fmt.Errorf("side store %s: the credentials from %s may not %s %s (%d): %w", where, m.credSource, op, m.describeKey(what), r.StatusCode, bs.ErrInvalid)
	}
	cause := err.Error()
	var ue *url.Error
	if errors.As(err, &ue) {
		cause = ue.Err.Error() // the request's URL says nothing the message does not
	}
	if r.Code != "" {
		cause = fmt.Sprintf("%s (%d %s)", r.Message, r.StatusCode, r.Code)
	}
	return fmt.Errorf("side store %s: cannot %s %s: %s at %s: %w", where, op, m.describeKey(what), cause, m.loc.Endpoint, bs.ErrUnavailable)
}

// describeKey returns a key as an s3:// URL, or the bucket for "".
func (m *medium) describeKey(key string) string {
	return "s3://" + m.loc.Bucket + "/" + key
}
