package subprocess

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"

	"github.com/echomq/kit/protocol"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// validator checks lines against protocol/port-protocol.schema.json: each request the kit sends
// against its op's request shape (required fields present even when zero), each reply against
// the envelope, then the op's result.
type validator struct {
	reply    *jsonschema.Schema
	requests map[string]*jsonschema.Schema
	results  map[string]*jsonschema.Schema
}

func newValidator() (*validator, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(protocol.Schema()))
	if err != nil {
		return nil, fmt.Errorf("subprocess: port protocol schema: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.UseRegexpEngine(regexpEngine)
	if err := c.AddResource(protocol.SchemaURL, doc); err != nil {
		return nil, fmt.Errorf("subprocess: port protocol schema: %w", err)
	}
	v := &validator{results: map[string]*jsonschema.Schema{}, requests: map[string]*jsonschema.Schema{}}
	if v.reply, err = c.Compile(protocol.SchemaURL + "#/$defs/reply"); err != nil {
		return nil, fmt.Errorf("subprocess: port protocol schema: %w", err)
	}
	for _, op := range protocol.Ops {
		s, err := c.Compile(protocol.SchemaURL + "#/$defs/requests/" + op)
		if err != nil {
			return nil, fmt.Errorf("subprocess: port protocol schema: request of %s: %w", op, err)
		}
		v.requests[op] = s
	}
	for _, op := range protocol.Ops {
		s, err := c.Compile(protocol.SchemaURL + "#/$defs/results/" + op)
		if err != nil {
			return nil, fmt.Errorf("subprocess: port protocol schema: result of %s: %w", op, err)
		}
		v.results[op] = s
	}
	return v, nil
}

// check validates a decoded JSON value; the error is one line.
func check(s *jsonschema.Schema, raw []byte) error {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return fmt.Errorf("not JSON: %v", err)
	}
	if err := s.Validate(doc); err != nil {
		return fmt.Errorf("%s", oneLine(err))
	}
	return nil
}

// oneLine flattens the validator's indented error tree.
func oneLine(err error) string {
	var parts []string
	for _, l := range strings.Split(err.Error(), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			parts = append(parts, strings.TrimPrefix(l, "- "))
		}
	}
	return strings.Join(parts, "; ")
}

// regexpEngine is Go's regexp, but for the schema's base64 pattern, which protocol.IsB64 decides
// by a scan: the regexp took over half a second for each payload of a few MiB (B-281).
func regexpEngine(pattern string) (jsonschema.Regexp, error) {
	if pattern == protocol.B64Pattern {
		return b64Regexp{}, nil
	}
	return regexp.Compile(pattern)
}

type b64Regexp struct{}

func (b64Regexp) MatchString(s string) bool { return protocol.IsB64(s) }
func (b64Regexp) String() string            { return protocol.B64Pattern }
