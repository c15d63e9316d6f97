package setup

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"time"

	"github.com/schollz/progressbar/v3"
)

// stallTimeout ends a download that has received nothing for this long (a variable so that a
// test can shorten it).
var stallTimeout = 60 * time.Second

// download fetches url into dst, checking the sha256 of what arrived against want before dst
// appears (the bytes go to dst.part first). A tarball already at dst with the right sum is
// kept and nothing is fetched.
func (r *runner) download(ctx context.Context, url, dst, want string) error {
	if ok, err := hasSHA256(dst, want); err != nil || ok {
		return err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("download %s: %w", url, err)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return fmt.Errorf("download %s: %w (check the network, or a proxy in HTTPS_PROXY)", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("download %s: HTTP %s", url, resp.Status)
	}
	part := dst + ".part"
	f, err := os.Create(part)
	if err != nil {
		return fmt.Errorf("download %s: %w", url, err)
	}
	defer os.Remove(part) // a no-op once renamed
	r.logf("downloading %s (%s)\n", url, size(resp.ContentLength))
	// A stalled connection would otherwise block forever: every read rearms the timer.
	timer := time.AfterFunc(stallTimeout, func() {
		cancel(fmt.Errorf("no data for %v", stallTimeout))
	})
	defer timer.Stop()
	h := sha256.New()
	w := io.MultiWriter(f, h)
	if r.progress != nil {
		bar := progressbar.NewOptions64(resp.ContentLength, progressbar.OptionSetWriter(r.progress),
			progressbar.OptionSetDescription(path.Base(url)), progressbar.OptionShowBytes(true),
			progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish())
		defer bar.Finish()
		w = io.MultiWriter(w, bar)
	}
	_, err = io.Copy(w, readFunc(func(p []byte) (int, error) {
		n, err := resp.Body.Read(p)
		timer.Reset(stallTimeout)
		return n, err
	}))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
			err = cause
		}
		return fmt.Errorf("download %s: %w", url, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		return fmt.Errorf("%w: %s has sha256 %s, pinned %s; not installing it", ErrChecksum, url, got, want)
	}
	if err := os.Rename(part, dst); err != nil {
		return fmt.Errorf("download %s: %w", url, err)
	}
	return nil
}

type readFunc func([]byte) (int, error)

func (f readFunc) Read(p []byte) (int, error) { return f(p) }

func size(n int64) string {
	if n < 0 {
		return "size unknown"
	}
	return fmt.Sprintf("%.1f MB", float64(n)/1e6)
}

// openMember opens the gzip'ed tarball tgz and positions a reader at the regular file member.
// The caller closes the returned closer.
func openMember(tgz, member string) (io.Reader, int64, io.Closer, error) {
	f, err := os.Open(tgz)
	if err != nil {
		return nil, 0, nil, err
	}
	zr, err := gzip.NewReader(f)
	if err != nil {
		f.Close()
		return nil, 0, nil, fmt.Errorf("%s: %w", tgz, err)
	}
	tr := tar.NewReader(zr)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			f.Close()
			return nil, 0, nil, fmt.Errorf("%s holds no %s", tgz, member)
		}
		if err != nil {
			f.Close()
			return nil, 0, nil, fmt.Errorf("%s: %w", tgz, err)
		}
		if hdr.Name == member && hdr.Typeflag == tar.TypeReg {
			return tr, hdr.Size, f, nil
		}
	}
}

// writeChecked copies exactly n bytes of r into dst (through dst.part, renamed only when the
// sha256 of the bytes is want).
func writeChecked(dst string, r io.Reader, n int64, want string) error {
	part := dst + ".part"
	f, err := os.Create(part)
	if err != nil {
		return err
	}
	defer os.Remove(part)
	h := sha256.New()
	got, err := io.Copy(io.MultiWriter(f, h), io.LimitReader(r, n))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", dst, err)
	}
	if got != n {
		return fmt.Errorf("write %s: the source ended after %d of %d bytes", dst, got, n)
	}
	if sum := hex.EncodeToString(h.Sum(nil)); sum != want {
		return fmt.Errorf("%w: %s would have sha256 %s, pinned %s; not installing it", ErrChecksum, dst, sum, want)
	}
	return os.Rename(part, dst)
}

// hasSHA256 reports whether path is a file whose sha256 is want; a missing file is false.
func hasSHA256(path, want string) (bool, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return false, fmt.Errorf("read %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)) == want, nil
}
