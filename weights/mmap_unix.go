//go:build unix

package weights

import (
	"fmt"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// mappedFiles: mapFile maps files (their pages can be dropped and read again).
const mappedFiles = true

// mapFile maps path read-only into memory. An empty file is returned as an
// empty slice (mmap refuses length 0).
func mapFile(path string) ([]byte, func() error, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	size := fi.Size()
	if size == 0 {
		return []byte{}, func() error { return nil }, nil
	}
	if size != int64(int(size)) {
		return nil, nil, fmt.Errorf("%s: %d bytes is too large to map", path, size)
	}
	b, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: mmap: %w", path, err)
	}
	return b, func() error { return syscall.Munmap(b) }, nil
}

// dropPages hands the whole pages of b, a part of a mapped file, back to the system: they
// leave the process's resident memory (and are read again from the file if touched).
func dropPages(b []byte) {
	page := uintptr(os.Getpagesize()) // 16 KiB on Apple silicon
	if uintptr(len(b)) < 2*page {
		return
	}
	start := uintptr(unsafe.Pointer(&b[0]))
	lo := int((start+page-1)&^(page-1) - start) // offsets in b of its first and last whole page
	hi := int((start+uintptr(len(b)))&^(page-1) - start)
	if hi <= lo {
		return
	}
	unix.Madvise(b[lo:hi], unix.MADV_DONTNEED) // best effort: the pages stay readable
}
