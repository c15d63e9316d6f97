// Package holdback is how much of a streamed text to hold back because it may be the start of
// a marker not yet complete: a tool-call tag, a reasoning tag, a stop string. The tool-call
// and reasoning parsers and the engine's stop strings share it.
package holdback

import "strings"

// Partial is the length of the longest proper prefix of marker that text ends with (0: none).
// Where text and marker are valid UTF-8, text minus that suffix ends on a character boundary.
func Partial(text, marker string) int {
	for n := min(len(marker)-1, len(text)); n > 0; n-- {
		if strings.HasSuffix(text, marker[:n]) {
			return n
		}
	}
	return 0
}

// Any is Partial for the marker of markers that gives the longest.
func Any(text string, markers []string) int {
	n := 0
	for _, m := range markers {
		n = max(n, Partial(text, m))
	}
	return n
}
