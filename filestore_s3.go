package svc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// s3Objects is the s3:// store of the file store's contents, shared by a
// fleet of instances: any S3-compatible server (AWS S3, MinIO, SeaweedFS,
// Ceph RGW), addressed path-style unless the URL says otherwise.
//
// A stored file is one object, "<prefix><id>", holding the content, with
// its metadata in the object's own headers: Content-Type, and the user
// metadata x-amz-meta-svc-filename (URL-escaped) and
// x-amz-meta-svc-created (RFC 3339). The object's Last-Modified is the
// file's last use as the fleet knows it: a touch copies the object onto
// itself (server side, metadata replaced, no content sent), which renews
// it. An object is written once, by a PUT with If-None-Match: *, so of
// two instances storing the same content at once one wins and the other
// hears that it exists (errObjectExists). Nothing here retries: the
// FileStore's guard (deadline and breaker) bounds each call.
type s3Objects struct {
	c      *minio.Client
	bucket string
	prefix string
}

var _ fileObjects = (*s3Objects)(nil)

// Names of the user metadata of an object (minio-go adds x-amz-meta-).
const (
	s3MetaFilename = "Svc-Filename"
	s3MetaCreated  = "Svc-Created"
	s3MetaNoType   = "Svc-No-Content-Type" // "1": the upload had no content type
)

// s3Location is what an s3:// URL says.
type s3Location struct {
	bucket, prefix     string
	endpoint           string
	secure             bool
	region             string
	virtualHost        bool
	credentialsFile    string
	credentialsProfile string
}

// parseS3URL reads s3://bucket/prefix?endpoint=host:port&region=r, with
// the optional parameters documented on FileStoreConfig.URL. It returns
// the parameters the FileStore itself reads (cache_bytes, timeout_ms)
// in rest.
func parseS3URL(raw string) (loc s3Location, rest url.Values, err error) {
	u, err := url.Parse(raw)
	if err != nil {
		return loc, nil, err
	}
	if u.Scheme != "s3" || u.Host == "" || u.User != nil || u.Opaque != "" {
		return loc, nil, fmt.Errorf("want s3://bucket/prefix?endpoint=host:port&region=name (credentials come from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY or a credentials file, never the URL)")
	}
	loc.bucket = u.Host
	loc.prefix = strings.TrimPrefix(u.Path, "/")
	if loc.prefix != "" && !strings.HasSuffix(loc.prefix, "/") {
		loc.prefix += "/"
	}
	if loc.prefix != "" && path.Clean("/"+loc.prefix) != "/"+strings.TrimSuffix(loc.prefix, "/") {
		return loc, nil, fmt.Errorf("prefix %q: want a clean path", loc.prefix)
	}
	q := u.Query()
	rest = url.Values{}
	loc.endpoint, loc.secure, loc.region = "s3.amazonaws.com", true, "us-east-1"
	for k, vs := range q {
		v := vs[len(vs)-1]
		switch k {
		case "endpoint":
			// host:port (HTTPS), or http://host:port, https://host:port.
			if e, ok := strings.CutPrefix(v, "http://"); ok {
				loc.endpoint, loc.secure = e, false
			} else if e, ok := strings.CutPrefix(v, "https://"); ok {
				loc.endpoint, loc.secure = e, true
			} else {
				loc.endpoint = v
			}
			loc.endpoint = strings.TrimSuffix(loc.endpoint, "/")
			if _, _, err := net.SplitHostPort(loc.endpoint); err != nil && strings.Contains(loc.endpoint, "/") {
				return loc, nil, fmt.Errorf("endpoint %q: want host:port or http(s)://host:port", v)
			}
		case "region":
			loc.region = v
		case "secure":
			loc.secure = v != "false" && v != "0"
		case "virtual_host":
			loc.virtualHost = v == "true" || v == "1"
		case "credentials_file":
			loc.credentialsFile = v
		case "profile":
			loc.credentialsProfile = v
		case "cache_bytes", "timeout_ms":
			rest.Set(k, v)
		default:
			return loc, nil, fmt.Errorf("unknown parameter %q (want endpoint, region, secure, virtual_host, credentials_file, profile, cache_bytes, timeout_ms)", k)
		}
	}
	return loc, rest, nil
}

// openS3Objects makes a client of loc. It makes no call: a store that is
// down at start is a store that is down (the guard's business).
func openS3Objects(loc s3Location) (*s3Objects, error) {
	// Credentials: the environment (AWS_ACCESS_KEY_ID and
	// AWS_SECRET_ACCESS_KEY), else the file (credentials_file, else
	// AWS_SHARED_CREDENTIALS_FILE or ~/.aws/credentials), in this order.
	// No instance-metadata lookup: it would be a network call at start.
	creds := credentials.NewChainCredentials([]credentials.Provider{
		&credentials.EnvAWS{},
		&credentials.FileAWSCredentials{Filename: loc.credentialsFile, Profile: loc.credentialsProfile},
	})
	if _, err := creds.GetWithContext(nil); err != nil {
		return nil, fmt.Errorf("no credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or name a credentials file (credentials_file= in the URL, or AWS_SHARED_CREDENTIALS_FILE): %w", err)
	}
	lookup := minio.BucketLookupPath
	if loc.virtualHost {
		lookup = minio.BucketLookupDNS
	}
	tr := &http.Transport{
		Proxy:                 nil, // a store on loopback or a private network: no proxy from the environment
		DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   256,
		IdleConnTimeout:       90 * time.Second,
		ResponseHeaderTimeout: time.Minute, // the guard's deadline is the real bound
		ExpectContinueTimeout: time.Second,
		DisableCompression:    true,
		WriteBufferSize:       256 << 10,
		ReadBufferSize:        256 << 10,
	}
	c, err := minio.New(loc.endpoint, &minio.Options{
		Creds:        creds,
		Secure:       loc.secure,
		Region:       loc.region,
		BucketLookup: lookup,
		Transport:    tr,
		MaxRetries:   1, // no retries: the guard decides
	})
	if err != nil {
		return nil, err
	}
	return &s3Objects{c: c, bucket: loc.bucket, prefix: loc.prefix}, nil
}

func (s *s3Objects) key(id string) string { return s.prefix + id }

// s3Result classifies an error of the client: a missing object is
// errNoObject, another answer of the server errStoreReply (the server is
// up), anything else (no connection, a deadline) a failure of the store.
func s3Result(err error) error {
	if err == nil {
		return nil
	}
	resp := minio.ToErrorResponse(err)
	switch {
	case resp.Code == minio.NoSuchKey || resp.StatusCode == http.StatusNotFound && resp.Code != minio.NoSuchBucket:
		return errNoObject
	case resp.Code == "PreconditionFailed" || resp.StatusCode == http.StatusPreconditionFailed:
		return errObjectExists
	case resp.StatusCode >= 400 && resp.StatusCode < 500:
		// The server answered (no bucket, no access): up, but refusing.
		return errStoreReply{err}
	}
	return err
}

// objectOf reads the metadata of a stored file from the object's headers.
func (s *s3Objects) objectOf(id string, oi minio.ObjectInfo) objectInfo {
	info := StoredFile{ID: id, Size: oi.Size, CreatedAt: oi.LastModified.UTC()}
	meta := func(name string) string {
		// minio-go gives user metadata both in UserMetadata (without
		// the prefix) and in Metadata (the raw headers).
		if v := oi.UserMetadata[name]; v != "" {
			return v
		}
		return oi.Metadata.Get("X-Amz-Meta-" + name)
	}
	if v := meta(s3MetaFilename); v != "" {
		if name, err := url.PathUnescape(v); err == nil {
			info.Filename = optional(name)
		}
	}
	if v := meta(s3MetaCreated); v != "" {
		if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
			info.CreatedAt = t.UTC()
		}
	}
	if oi.ContentType != "" && meta(s3MetaNoType) != "1" {
		ct := oi.ContentType
		info.ContentType = &ct
	}
	return objectInfo{info: info, lastUse: oi.LastModified}
}

// metaOf is the user metadata that records info.
func metaOf(info StoredFile) map[string]string {
	m := map[string]string{s3MetaCreated: info.CreatedAt.UTC().Format(time.RFC3339Nano)}
	if info.Filename != nil {
		m[s3MetaFilename] = url.PathEscape(*info.Filename)
	}
	if info.ContentType == nil {
		// S3 gives every object a content type; this says it had none.
		m[s3MetaNoType] = "1"
	}
	return m
}

func contentTypeOf(info StoredFile) string {
	if info.ContentType == nil {
		return "application/octet-stream"
	}
	return *info.ContentType
}

func (s *s3Objects) head(ctx context.Context, id string) (objectInfo, error) {
	oi, err := s.c.StatObject(ctx, s.bucket, s.key(id), minio.StatObjectOptions{})
	if err := s3Result(err); err != nil {
		return objectInfo{}, err
	}
	return s.objectOf(id, oi), nil
}

func (s *s3Objects) put(ctx context.Context, info StoredFile, content *os.File) error {
	opts := minio.PutObjectOptions{
		ContentType:  contentTypeOf(info),
		UserMetadata: metaOf(info),
		// One part up to the largest upload, so that the object appears
		// at once, whole; several parts in parallel above it.
		PartSize:              64 << 20,
		NumThreads:            4,
		DisableContentSha256:  true, // the content is hashed already, and checked on every read
		DisableMultipart:      false,
		ConcurrentStreamParts: false,
	}
	opts.SetMatchETagExcept("*")
	_, err := s.c.PutObject(ctx, s.bucket, s.key(info.ID), io.NewSectionReader(content, 0, info.Size), info.Size, opts)
	return s3Result(err)
}

func (s *s3Objects) get(ctx context.Context, id string, w io.Writer) (int64, error) {
	o, err := s.c.GetObject(ctx, s.bucket, s.key(id), minio.GetObjectOptions{})
	if err := s3Result(err); err != nil {
		return 0, err
	}
	defer o.Close()
	n, err := io.Copy(w, o)
	return n, s3Result(err)
}

func (s *s3Objects) touch(ctx context.Context, info StoredFile) error {
	src := minio.CopySrcOptions{Bucket: s.bucket, Object: s.key(info.ID)}
	dst := minio.CopyDestOptions{Bucket: s.bucket, Object: s.key(info.ID),
		ReplaceMetadata: true, UserMetadata: metaOf(info)}
	dst.UserMetadata["Content-Type"] = contentTypeOf(info)
	_, err := s.c.CopyObject(ctx, dst, src)
	return s3Result(err)
}

func (s *s3Objects) list(ctx context.Context, each func(id string, size int64, lastUse time.Time)) error {
	for oi := range s.c.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: s.prefix}) {
		if oi.Err != nil {
			return s3Result(oi.Err)
		}
		id := strings.TrimPrefix(oi.Key, s.prefix)
		if !ValidFileID(id) {
			continue // not ours
		}
		each(id, oi.Size, oi.LastModified)
	}
	return ctx.Err()
}

func (s *s3Objects) remove(ctx context.Context, id string) error {
	return s3Result(s.c.RemoveObject(ctx, s.bucket, s.key(id), minio.RemoveObjectOptions{}))
}

func (s *s3Objects) describe(log *slog.Logger) []any {
	return []any{"endpoint", s.c.EndpointURL().Host, "bucket", s.bucket, "prefix", s.prefix}
}

// errObjectExists: a PUT found the object written already.
var errObjectExists = errors.New("the object exists")

func (s *s3Objects) close() error { return nil }
