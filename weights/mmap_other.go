//go:build !unix

package weights

import "os"

// mapFile reads path into memory where mmap is not available.
func mapFile(path string) ([]byte, func() error, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	return b, func() error { return nil }, nil
}

// mappedFiles: mapFile reads files into memory (their pages cannot be dropped).
const mappedFiles = false

func dropPages([]byte) {}
