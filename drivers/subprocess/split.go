package subprocess

import (
	"fmt"
	"strings"
)

// Split breaks a command line into words the way a POSIX shell would for the simple cases a
// port command needs: blanks separate words, single quotes keep everything literally, double
// quotes keep blanks and allow \" and \\, a backslash outside quotes escapes the next byte.
// No expansion, globbing or redirection happens.
func Split(line string) ([]string, error) {
	var (
		words []string
		cur   strings.Builder
		inW   bool
	)
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if inW {
				words = append(words, cur.String())
				cur.Reset()
				inW = false
			}
		case c == '\'':
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("subprocess: command %q: unterminated single quote", line)
			}
			cur.WriteString(line[i+1 : i+1+j])
			i += j + 1
			inW = true
		case c == '"':
			i++
			for ; i < len(line) && line[i] != '"'; i++ {
				if line[i] == '\\' && i+1 < len(line) && (line[i+1] == '"' || line[i+1] == '\\') {
					i++
				}
				cur.WriteByte(line[i])
			}
			if i >= len(line) {
				return nil, fmt.Errorf("subprocess: command %q: unterminated double quote", line)
			}
			inW = true
		case c == '\\':
			if i+1 >= len(line) {
				return nil, fmt.Errorf("subprocess: command %q: trailing backslash", line)
			}
			i++
			cur.WriteByte(line[i])
			inW = true
		default:
			cur.WriteByte(c)
			inW = true
		}
	}
	if inW {
		words = append(words, cur.String())
	}
	if len(words) == 0 {
		return nil, fmt.Errorf("subprocess: empty command")
	}
	return words, nil
}
