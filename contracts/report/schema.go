package report

import (
	"bytes"
	"errors"
	"fmt"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// ErrSchema is a report.json that does not match report.schema.json.
var ErrSchema = errors.New("report: report.json does not match report.schema.json")

// compiled is the schema, compiled once.
var compiled = sync.OnceValues(func() (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(SchemaID, doc); err != nil {
		return nil, err
	}
	return c.Compile(SchemaID)
})

// Validate holds a report.json's bytes to report.schema.json; a mismatch is ErrSchema with the
// places it fails.
func Validate(raw []byte) error {
	s, err := compiled()
	if err != nil {
		return fmt.Errorf("report: the embedded schema: %w", err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return fmt.Errorf("%w: %v", ErrSchema, err)
	}
	if err := s.Validate(doc); err != nil {
		return fmt.Errorf("%w: %v", ErrSchema, err)
	}
	return nil
}
