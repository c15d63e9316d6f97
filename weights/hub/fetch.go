package hub

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// Download fetches what wspec loads of the repository (Wanted) into the cache, or offline
// finds it there, and returns the snapshot folder, or for a repository of GGUF files the
// chosen file in it.
func Download(ctx context.Context, ref Ref, o Options) (string, error) {
	o = o.FromEnv()
	// a revision names refs/REVISION in the cache: it must stay inside refs/
	if !revisionName.MatchString(o.Revision) || strings.Contains(o.Revision, "..") {
		return "", fmt.Errorf("hub: revision %q is not a branch, tag or commit name", o.Revision)
	}
	if o.Offline {
		return o.offline(ref)
	}
	commit, files, err := o.revision(ctx, ref.Repo)
	if err != nil {
		return "", err
	}
	want, gguf, err := Wanted(files, ref.Quant)
	if err != nil {
		return "", fmt.Errorf("%s at %s: %w", ref.Repo, o.Revision, err)
	}
	snap := filepath.Join(o.repoDir(ref.Repo), "snapshots", commit)
	for _, f := range want {
		if err := o.fetch(ctx, ref.Repo, commit, f, snap); err != nil {
			return "", fmt.Errorf("%s: %s: %w", ref.Repo, f, err)
		}
	}
	if o.Revision != commit {
		refs := filepath.Join(o.repoDir(ref.Repo), "refs", filepath.FromSlash(o.Revision))
		if err := os.MkdirAll(filepath.Dir(refs), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(refs, []byte(commit), 0o644); err != nil {
			return "", err
		}
	}
	if gguf != "" {
		return filepath.Join(snap, gguf), nil
	}
	return snap, nil
}

// offline finds the revision's snapshot in the cache, with every file wspec loads of it.
func (o Options) offline(ref Ref) (string, error) {
	commit, err := o.cachedCommit(ref.Repo)
	if err != nil {
		return "", err
	}
	snap := filepath.Join(o.repoDir(ref.Repo), "snapshots", commit)
	entries, err := os.ReadDir(snap)
	if err != nil {
		return "", fmt.Errorf("%w: %s at %s: no snapshot %s in the cache (offline)", ErrNotFound, ref.Repo, o.Revision, commit)
	}
	var files []string
	for _, e := range entries {
		if _, err := os.Stat(filepath.Join(snap, e.Name())); err == nil { // a link whose blob is there
			files = append(files, e.Name())
		}
	}
	want, gguf, err := Wanted(files, ref.Quant)
	if err != nil {
		return "", fmt.Errorf("%s at %s in the cache (offline): %w", ref.Repo, o.Revision, err)
	}
	if !slicesContain(want, "config.json") && gguf == "" {
		return "", fmt.Errorf("%w: %s at %s in the cache has no config.json (offline)", ErrNotFound, ref.Repo, o.Revision)
	}
	if gguf != "" {
		return filepath.Join(snap, gguf), nil
	}
	return snap, nil
}

func slicesContain(s []string, x string) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}

// revision asks the Hub which commit the revision names and the files it holds.
func (o Options) revision(ctx context.Context, repo string) (string, []string, error) {
	u := fmt.Sprintf("%s/api/models/%s/revision/%s", o.Endpoint, repo, url.PathEscape(o.Revision))
	resp, err := o.do(ctx, http.MethodGet, u, nil, true)
	if err != nil {
		return "", nil, err
	}
	defer resp.Body.Close()
	if err := status(resp, repo+" at "+o.Revision); err != nil {
		return "", nil, err
	}
	var info struct {
		Sha      string `json:"sha"`
		Siblings []struct {
			Name string `json:"rfilename"`
		} `json:"siblings"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&info); err != nil {
		return "", nil, fmt.Errorf("hub: %s's model info: %w", repo, err)
	}
	if !commitHash.MatchString(info.Sha) {
		return "", nil, fmt.Errorf("hub: %s's model info names no commit (sha %q)", repo, info.Sha)
	}
	files := make([]string, 0, len(info.Siblings))
	for _, s := range info.Siblings {
		files = append(files, s.Name)
	}
	return info.Sha, files, nil
}

// fetch makes snap/file a link to its blob, downloading the blob (or the rest of it) first
// unless the cache holds it.
func (o Options) fetch(ctx context.Context, repo, commit, file, snap string) error {
	link := filepath.Join(snap, filepath.FromSlash(file))
	if _, err := os.Stat(link); err == nil {
		return nil // linked to a complete blob by an earlier download (or huggingface_hub)
	}
	meta, err := o.head(ctx, fmt.Sprintf("%s/%s/resolve/%s/%s", o.Endpoint, repo, commit, file))
	if err != nil {
		return err
	}
	blobs := filepath.Join(o.repoDir(repo), "blobs")
	if err := os.MkdirAll(blobs, 0o755); err != nil {
		return err
	}
	blob := filepath.Join(blobs, meta.etag)
	if st, err := os.Stat(blob); err != nil || st.Size() != meta.size {
		if err := o.download(ctx, meta, blob, file); err != nil {
			return err
		}
	}
	return linkBlob(blob, link)
}

// fileMeta is what the Hub says of a file before it is downloaded.
type fileMeta struct {
	etag string // the blob's name: sha256 for LFS files, git's blob sha1 otherwise
	size int64
	url  string // where the bytes are (the Hub, or where it redirects)
}

var revisionName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._/-]{0,254}$`)

var etagName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// head reads a file's ETag, size and location as huggingface_hub does: a HEAD request that
// follows relative redirects (a renamed repository) but not one to another host (the
// storage the Hub hands large files to), whose address is where the bytes are.
func (o Options) head(ctx context.Context, u string) (fileMeta, error) {
	for range 5 {
		resp, err := o.do(ctx, http.MethodHead, u, nil, false)
		if err != nil {
			return fileMeta{}, err
		}
		resp.Body.Close()
		if resp.StatusCode >= 300 && resp.StatusCode < 400 {
			loc, err := resp.Location()
			if err != nil {
				return fileMeta{}, fmt.Errorf("hub: redirect without a location: %w", err)
			}
			if strings.HasPrefix(resp.Header.Get("Location"), "/") {
				u = loc.String()
				continue
			}
			return o.meta(resp, loc.String())
		}
		if err := status(resp, u); err != nil {
			return fileMeta{}, err
		}
		return o.meta(resp, u)
	}
	return fileMeta{}, fmt.Errorf("hub: %s: too many redirects", u)
}

func (o Options) meta(resp *http.Response, u string) (fileMeta, error) {
	etag := resp.Header.Get("X-Linked-Etag")
	if etag == "" {
		etag = resp.Header.Get("ETag")
	}
	etag = strings.Trim(strings.TrimPrefix(etag, "W/"), `"`)
	size := resp.Header.Get("X-Linked-Size")
	if size == "" {
		size = resp.Header.Get("Content-Length")
	}
	n, err := strconv.ParseInt(size, 10, 64)
	switch {
	case !etagName.MatchString(etag):
		return fileMeta{}, fmt.Errorf("hub: %s: no usable ETag (%q)", u, etag)
	case err != nil || n < 0:
		return fileMeta{}, fmt.Errorf("hub: %s: no usable size (%q)", u, size)
	}
	return fileMeta{etag: etag, size: n, url: u}, nil
}

// download writes the blob, resuming from blob.incomplete when an earlier download left one,
// and checks its size and hash before it becomes the blob.
func (o Options) download(ctx context.Context, meta fileMeta, blob, file string) error {
	part := blob + ".incomplete"
	f, err := os.OpenFile(part, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	sum := hasher(meta.etag, meta.size)
	have, err := io.Copy(sum, f) // the bytes an earlier download left, into the hash
	if err != nil {
		return err
	}
	if have > meta.size {
		if err := restart(f, &sum, meta); err != nil {
			return err
		}
		have = 0
	}
	if have < meta.size {
		hdr := http.Header{}
		if have > 0 {
			hdr.Set("Range", fmt.Sprintf("bytes=%d-", have))
		}
		resp, err := o.do(ctx, http.MethodGet, meta.url, hdr, true)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		switch {
		case resp.StatusCode == http.StatusPartialContent && have > 0:
		case resp.StatusCode == http.StatusOK:
			if err := restart(f, &sum, meta); err != nil { // the server sends it whole
				return err
			}
			have = 0
		default:
			if err := status(resp, file); err != nil {
				return err
			}
			return fmt.Errorf("hub: %s: status %s to a download", file, resp.Status)
		}
		w := &progressWriter{w: io.MultiWriter(f, sum), done: have, total: meta.size, file: file, report: o.Progress}
		n, err := io.Copy(w, io.LimitReader(resp.Body, meta.size-have+1))
		if err != nil {
			return fmt.Errorf("hub: %s: %w (%d of %d bytes kept to resume)", file, err, have+n, meta.size)
		}
		have += n
	}
	if have != meta.size || !sum.ok() {
		f.Close()
		os.Remove(part) // a wrong file is not resumed
		return fmt.Errorf("%w: %s: %d bytes (want %d), %s", ErrCorrupt, file, have, meta.size, sum.what())
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(part, blob)
}

func restart(f *os.File, sum *blobHash, meta fileMeta) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err := f.Seek(0, io.SeekStart)
	*sum = hasher(meta.etag, meta.size)
	return err
}

// do sends a request to the Hub, with the token where it goes to the Hub's own host.
func (o Options) do(ctx context.Context, method, u string, hdr http.Header, follow bool) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return nil, err
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	req.Header.Set("User-Agent", "wspec")
	req.Header.Set("Accept-Encoding", "identity")
	if hub, err := url.Parse(o.Endpoint); err == nil && o.Token != "" && req.URL.Host == hub.Host {
		req.Header.Set("Authorization", "Bearer "+o.Token)
	}
	c := &http.Client{}
	if !follow {
		c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("hub: %w (offline? HF_HUB_OFFLINE=1 uses the cache alone)", err)
	}
	return resp, nil
}

// status turns the Hub's refusals into errors that say what to do.
func status(resp *http.Response, what string) error {
	switch {
	case resp.StatusCode < 300:
		return nil
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return fmt.Errorf("hub: %s: %s (a gated or private repository needs HF_TOKEN, and access granted on the Hub)", what, resp.Status)
	case resp.StatusCode == http.StatusNotFound:
		return fmt.Errorf("%w: %s (%s)", ErrNotFound, what, resp.Status)
	}
	return fmt.Errorf("hub: %s: %s", what, resp.Status)
}

// linkBlob points link at blob relatively, as huggingface_hub does (../../blobs/ETAG), or
// copies it where the file system has no symbolic links.
func linkBlob(blob, link string) error {
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		return err
	}
	rel, err := filepath.Rel(filepath.Dir(link), blob)
	if err != nil {
		return err
	}
	os.Remove(link)
	if err := os.Symlink(rel, link); err == nil {
		return nil
	}
	in, err := os.Open(blob)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(link)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// blobHash checks a download against its ETag: sha256 for LFS files (64 hex digits), git's
// blob sha1 for the rest (40); any other ETag is checked by size alone.
type blobHash struct {
	h    hash.Hash
	want string
}

func hasher(etag string, size int64) blobHash {
	switch {
	case isHex(etag, 64):
		return blobHash{sha256.New(), etag}
	case isHex(etag, 40):
		h := sha1.New()
		fmt.Fprintf(h, "blob %d\x00", size)
		return blobHash{h, etag}
	}
	return blobHash{}
}

func (b blobHash) Write(p []byte) (int, error) {
	if b.h == nil {
		return len(p), nil
	}
	return b.h.Write(p)
}

func (b blobHash) ok() bool { return b.h == nil || hex.EncodeToString(b.h.Sum(nil)) == b.want }

func (b blobHash) what() string {
	if b.h == nil {
		return "no hash to check"
	}
	return fmt.Sprintf("hash %s (want %s)", hex.EncodeToString(b.h.Sum(nil)), b.want)
}

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// progressWriter reports the bytes written so far.
type progressWriter struct {
	w           io.Writer
	done, total int64
	file        string
	report      func(file string, done, total int64)
}

func (p *progressWriter) Write(b []byte) (int, error) {
	n, err := p.w.Write(b)
	p.done += int64(n)
	if p.report != nil {
		p.report(p.file, p.done, p.total)
	}
	return n, err
}
