// Package home is where wspec keeps what it installs (the default model, its drafters, the
// Dawn library): the folders searched, in order, for a file wspec was not told the path of:
//
//  1. $WSPEC_HOME, when set;
//  2. the user cache folder's wspec (~/.cache/wspec on Linux, ~/Library/Caches/wspec on
//     macOS, %LocalAppData%\wspec on Windows): where `wspec setup` installs by default;
//  3. .wspec in the working folder (where ./setup.sh installs, in the repository).
//
// Nothing walks up from the working folder or the executable: a binary finds the same files
// wherever it runs.
package home

import (
	"os"
	"path/filepath"
)

// Env names the environment variable that sets the first folder searched.
const Env = "WSPEC_HOME"

// Dirs lists the folders searched, in order (those that cannot be named are left out).
func Dirs() []string {
	var out []string
	if d := os.Getenv(Env); d != "" {
		out = append(out, d)
	}
	if d, err := os.UserCacheDir(); err == nil {
		out = append(out, filepath.Join(d, "wspec"))
	}
	if wd, err := os.Getwd(); err == nil {
		out = append(out, filepath.Join(wd, ".wspec"))
	}
	return out
}

// Default is where wspec installs when not told where: $WSPEC_HOME, else the user cache
// folder's wspec, else .wspec in the working folder.
func Default() string {
	return Dirs()[0]
}

// Find returns the first rel (a path relative to a folder of Dirs) that holds the file probe,
// with the folders it searched.
func Find(rel, probe string) (string, bool, []string) {
	var tried []string
	for _, d := range Dirs() {
		p := filepath.Join(d, rel)
		tried = append(tried, p)
		if _, err := os.Stat(filepath.Join(p, probe)); err == nil {
			return p, true, tried
		}
	}
	return "", false, tried
}
