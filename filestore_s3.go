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
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// s3Objects is the s3:// store of the file store's contents, shared by a
// fleet of instances: any S3-compatible server (AWS S3, MinIO, SeaweedFS,
// Ceph RGW), addressed path-style unless the URL says otherwise.
//
// A stored file is the object "<prefix><id>", with its metadata in the
// object's own headers: Content-Type, and the user metadata
// x-amz-meta-svc-filename (URL-escaped) and x-amz-meta-svc-created
// (RFC 3339). Its content is either the object's own (a file of up to
// one part, written by one PUT once it is hashed) or, for a larger file,
// a staged object "<prefix>.content/<random>" that the file's object
// names in x-amz-meta-svc-content, with its size in
// x-amz-meta-svc-size: a larger upload is sent in parts while it
// arrives (a multipart upload of the staged object), because its id,
// the hash of all of it, is known only at its end and S3 has no rename.
// Nothing refers to a staged object until the file's object is written,
// so an upload cut anywhere leaves nothing any instance serves; tidy
// removes what such an upload left.
//
// The object's Last-Modified is the file's last use as the fleet knows
// it: a touch copies the object onto itself (server side, metadata
// replaced, no content sent), which renews it. The file's object is
// written once, by a PUT with If-None-Match: *, so of two instances
// storing the same content at once one wins and the other hears that it
// exists (errObjectExists). Nothing here retries: the FileStore's guard
// (deadline and breaker) bounds each call.
type s3Objects struct {
	c      *minio.Client
	bucket string
	prefix string

	// refs say where the content of a file seen here is when a listing
	// cannot tell: a staged object, or (key "") the file's own empty
	// object. A file's content never changes, so what one HEAD told is
	// kept (list needs the sizes, tidy the references).
	mu   sync.Mutex
	refs map[string]stagedRef
}

// stagedRef is where the content of a file is.
type stagedRef struct {
	key  string // of the staged object; "": the file's own object
	size int64
}

// s3StagedDir is where staged contents are, under the prefix.
const s3StagedDir = ".content/"

var _ fileObjects = (*s3Objects)(nil)

// Names of the user metadata of an object (minio-go adds x-amz-meta-).
const (
	s3MetaFilename = "Svc-Filename"
	s3MetaCreated  = "Svc-Created"
	s3MetaNoType   = "Svc-No-Content-Type" // "1": the upload had no content type
	s3MetaContent  = "Svc-Content"         // the staged object of the content, under the prefix
	s3MetaSize     = "Svc-Size"            // the size of the staged content
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
	return &s3Objects{c: c, bucket: loc.bucket, prefix: loc.prefix, refs: map[string]stagedRef{}}, nil
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

// objectOf reads the metadata of a stored file from the object's
// headers. A reference to staged content that is not a staged object of
// this prefix is not followed: errNoObject.
func (s *s3Objects) objectOf(id string, oi minio.ObjectInfo) (objectInfo, error) {
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
	obj := objectInfo{info: info, lastUse: oi.LastModified}
	if v := meta(s3MetaContent); v != "" {
		size, err := strconv.ParseInt(meta(s3MetaSize), 10, 64)
		if !validStagedName(v) || err != nil || size < 0 || oi.Size != 0 {
			return objectInfo{}, errNoObject
		}
		obj.ref, obj.info.Size = s.prefix+v, size
		s.mu.Lock()
		s.refs[id] = stagedRef{key: obj.ref, size: size}
		s.mu.Unlock()
	}
	return obj, nil
}

// validStagedName reports whether name, relative to the prefix, is one
// stage could have made.
func validStagedName(name string) bool {
	rest, ok := strings.CutPrefix(name, s3StagedDir)
	return ok && uuid.Validate(rest) == nil && len(rest) == 36
}

// metaOf is the user metadata that records obj.
func (s *s3Objects) metaOf(obj objectInfo) map[string]string {
	info := obj.info
	m := map[string]string{s3MetaCreated: info.CreatedAt.UTC().Format(time.RFC3339Nano)}
	if info.Filename != nil {
		m[s3MetaFilename] = url.PathEscape(*info.Filename)
	}
	if info.ContentType == nil {
		// S3 gives every object a content type; this says it had none.
		m[s3MetaNoType] = "1"
	}
	if obj.ref != "" {
		m[s3MetaContent] = strings.TrimPrefix(obj.ref, s.prefix)
		m[s3MetaSize] = strconv.FormatInt(info.Size, 10)
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
	return s.objectOf(id, oi)
}

func (s *s3Objects) put(ctx context.Context, info StoredFile, content *os.File) error {
	opts := minio.PutObjectOptions{
		ContentType:  contentTypeOf(info),
		UserMetadata: s.metaOf(objectInfo{info: info}),
		// One part: FileStore stages a file larger than one part.
		PartSize:             max(uint64(info.Size), 5<<20),
		DisableContentSha256: true, // the content is hashed already, and checked on every read
	}
	opts.SetMatchETagExcept("*")
	_, err := s.c.PutObject(ctx, s.bucket, s.key(info.ID), io.NewSectionReader(content, 0, info.Size), info.Size, opts)
	return s3Result(err)
}

// s3Stage is content being staged: a multipart upload of a staged
// object. Its parts may be sent concurrently.
type s3Stage struct {
	s        *s3Objects
	key      string
	uploadID string

	mu    sync.Mutex
	parts []minio.CompletePart
	done  bool // completed: the staged object exists
}

func (s *s3Objects) stage(ctx context.Context) (stagedContent, error) {
	key := s.prefix + s3StagedDir + uuid.NewString()
	id, err := minio.Core{Client: s.c}.NewMultipartUpload(ctx, s.bucket, key,
		minio.PutObjectOptions{ContentType: "application/octet-stream"})
	if err := s3Result(err); err != nil {
		return nil, err
	}
	return &s3Stage{s: s, key: key, uploadID: id}, nil
}

func (st *s3Stage) part(ctx context.Context, n int, content io.Reader, size int64) error {
	p, err := minio.Core{Client: st.s.c}.PutObjectPart(ctx, st.s.bucket, st.key, st.uploadID, n, content, size,
		minio.PutObjectPartOptions{DisableContentSha256: true})
	if err := s3Result(err); err != nil {
		return err
	}
	st.mu.Lock()
	st.parts = append(st.parts, minio.CompletePart{PartNumber: n, ETag: p.ETag})
	st.mu.Unlock()
	return nil
}

func (st *s3Stage) complete(ctx context.Context) (string, error) {
	st.mu.Lock()
	parts := slices.Clone(st.parts)
	st.mu.Unlock()
	slices.SortFunc(parts, func(a, b minio.CompletePart) int { return a.PartNumber - b.PartNumber })
	_, err := minio.Core{Client: st.s.c}.CompleteMultipartUpload(ctx, st.s.bucket, st.key, st.uploadID, parts, minio.PutObjectOptions{})
	if err := s3Result(err); err != nil {
		return "", err
	}
	st.mu.Lock()
	st.done = true
	st.mu.Unlock()
	return st.key, nil
}

func (st *s3Stage) abort(ctx context.Context) error {
	st.mu.Lock()
	done := st.done
	st.mu.Unlock()
	if done {
		return s3Result(st.s.c.RemoveObject(ctx, st.s.bucket, st.key, minio.RemoveObjectOptions{}))
	}
	err := s3Result(minio.Core{Client: st.s.c}.AbortMultipartUpload(ctx, st.s.bucket, st.key, st.uploadID))
	if errors.Is(err, errNoObject) {
		// No such upload: a complete cut short may have ended it,
		// into the staged object.
		return s3Result(st.s.c.RemoveObject(ctx, st.s.bucket, st.key, minio.RemoveObjectOptions{}))
	}
	return err
}

// link writes the file obj describes, its content the staged object
// obj.ref, unless the file exists: errObjectExists.
func (s *s3Objects) link(ctx context.Context, obj objectInfo) error {
	opts := minio.PutObjectOptions{ContentType: contentTypeOf(obj.info), UserMetadata: s.metaOf(obj)}
	opts.SetMatchETagExcept("*")
	_, err := s.c.PutObject(ctx, s.bucket, s.key(obj.info.ID), strings.NewReader(""), 0, opts)
	if err := s3Result(err); err != nil {
		return err
	}
	s.mu.Lock()
	s.refs[obj.info.ID] = stagedRef{key: obj.ref, size: obj.info.Size}
	s.mu.Unlock()
	return nil
}

func (s *s3Objects) get(ctx context.Context, obj objectInfo, w io.Writer) (int64, error) {
	key := obj.ref
	if key == "" {
		key = s.key(obj.info.ID)
	}
	// The response's body itself (minio.Core), read in large chunks:
	// minio.Object hands each Read to a goroutine of its own.
	body, _, _, err := minio.Core{Client: s.c}.GetObject(ctx, s.bucket, key, minio.GetObjectOptions{})
	if err := s3Result(err); err != nil {
		return 0, err
	}
	defer body.Close()
	buf := putBufs.Get().(*[256 * KiB]byte)
	defer putBufs.Put(buf)
	n, err := io.CopyBuffer(w, onlyReader{body}, buf[:])
	return n, s3Result(err)
}

// onlyReader hides a reader's WriteTo, so that io.CopyBuffer uses its
// buffer.
type onlyReader struct{ io.Reader }

func (s *s3Objects) touch(ctx context.Context, obj objectInfo) error {
	src := minio.CopySrcOptions{Bucket: s.bucket, Object: s.key(obj.info.ID)}
	dst := minio.CopyDestOptions{Bucket: s.bucket, Object: s.key(obj.info.ID),
		ReplaceMetadata: true, UserMetadata: s.metaOf(obj)}
	dst.UserMetadata["Content-Type"] = contentTypeOf(obj.info)
	_, err := s.c.CopyObject(ctx, dst, src)
	return s3Result(err)
}

// list lists the files' objects. The size of a file whose content is
// staged is the one its object records: known here, or asked (a file's
// size never changes).
func (s *s3Objects) list(ctx context.Context, each func(id string, size int64, lastUse time.Time)) error {
	for oi := range s.c.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: s.prefix}) {
		if oi.Err != nil {
			return s3Result(oi.Err)
		}
		id := strings.TrimPrefix(oi.Key, s.prefix)
		if !ValidFileID(id) {
			continue // not a file: the staged contents, or not ours
		}
		size := oi.Size
		if size == 0 {
			s.mu.Lock()
			ref, ok := s.refs[id]
			s.mu.Unlock()
			if !ok {
				obj, err := s.head(ctx, id)
				if errors.Is(err, errNoObject) {
					continue
				} else if err != nil {
					return err
				}
				ref = stagedRef{key: obj.ref, size: obj.info.Size}
				s.mu.Lock()
				s.refs[id] = ref // an empty file's too: asked once
				s.mu.Unlock()
			}
			size = ref.size
		}
		each(id, size, oi.LastModified)
	}
	return ctx.Err()
}

// remove removes the file's object, then its staged content if it has
// one (what is left if that fails is tidy's).
func (s *s3Objects) remove(ctx context.Context, id string) error {
	s.mu.Lock()
	ref, ok := s.refs[id]
	s.mu.Unlock()
	if !ok {
		obj, err := s.head(ctx, id)
		switch {
		case errors.Is(err, errNoObject):
			return nil
		case err != nil:
			return err
		}
		ref.key = obj.ref
	}
	if err := s3Result(s.c.RemoveObject(ctx, s.bucket, s.key(id), minio.RemoveObjectOptions{})); err != nil {
		return err
	}
	s.mu.Lock()
	delete(s.refs, id)
	s.mu.Unlock()
	if ref.key == "" {
		return nil
	}
	return s3Result(s.c.RemoveObject(ctx, s.bucket, ref.key, minio.RemoveObjectOptions{}))
}

// tidy removes the staged contents that no file refers to and that were
// begun before the cutoff: what uploads cut after their first part left
// (the instance killed, the store failing as they ended). It lists the
// files first (their references), then the staged objects and the
// multipart uploads in progress: content staged after the files' listing
// is younger than the cutoff.
func (s *s3Objects) tidy(ctx context.Context, cutoff time.Time) (removed int, err error) {
	used := map[string]bool{}
	if err := s.list(ctx, func(id string, _ int64, _ time.Time) {
		s.mu.Lock()
		if ref, ok := s.refs[id]; ok {
			used[ref.key] = true
		}
		s.mu.Unlock()
	}); err != nil {
		return 0, err
	}
	dir := s.prefix + s3StagedDir
	for oi := range s.c.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: dir, Recursive: true}) {
		if oi.Err != nil {
			return removed, s3Result(oi.Err)
		}
		if used[oi.Key] || !oi.LastModified.Before(cutoff) || !validStagedName(strings.TrimPrefix(oi.Key, s.prefix)) {
			continue
		}
		if err := s3Result(s.c.RemoveObject(ctx, s.bucket, oi.Key, minio.RemoveObjectOptions{})); err != nil {
			return removed, err
		}
		removed++
	}
	core := minio.Core{Client: s.c}
	for keyMarker, idMarker := "", ""; ; {
		res, err := core.ListMultipartUploads(ctx, s.bucket, dir, keyMarker, idMarker, "", 1000)
		if err := s3Result(err); err != nil {
			return removed, err
		}
		for _, u := range res.Uploads {
			if !strings.HasPrefix(u.Key, dir) || !u.Initiated.Before(cutoff) {
				continue
			}
			err := s3Result(core.AbortMultipartUpload(ctx, s.bucket, u.Key, u.UploadID))
			if err != nil && !errors.Is(err, errNoObject) {
				return removed, err
			}
			removed++
		}
		if !res.IsTruncated {
			return removed, nil
		}
		keyMarker, idMarker = res.NextKeyMarker, res.NextUploadIDMarker
	}
}

func (s *s3Objects) describe(log *slog.Logger) []any {
	return []any{"endpoint", s.c.EndpointURL().Host, "bucket", s.bucket, "prefix", s.prefix}
}

// errObjectExists: a PUT found the object written already.
var errObjectExists = errors.New("the object exists")

func (s *s3Objects) close() error { return nil }
