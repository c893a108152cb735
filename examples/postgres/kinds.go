package main

import (
	_ "embed"
	"encoding/json"

	"github.com/converge-go/converge/store/apistore"
	"github.com/converge-go/converge/store/apistore/schema"
)

// kindRules are the operator's kinds' rules, per key prefix, in the
// declarative form of store/apistore/schema: written once, in kinds.json,
// which the demo's store server compiles into its layer's admission and a
// convergestore serving the operator's store loads:
//
//	convergestore -dir DIR -kinds examples/postgres/kinds.json
//
// A spec that breaks them (a connectionLimit below -1, a member or owner
// that is no SQL identifier, an unknown reclaim policy or field), and a
// Role, Database, schedule or Restore whose name (its key after the
// prefix) is no SQL identifier, are refused where they are written,
// naming the field, and never reach the reconciler. What a
// schema cannot say (a reserved name, a role member of itself, a cron
// schedule that does not parse) the reconciler still checks.
//
//go:embed kinds.json
var kindRules []byte

// admission returns the layer's options that admit the operator's kinds
// by kindRules.
func admission() ([]apistore.Option[json.RawMessage], error) {
	r, err := schema.Parse(kindRules)
	if err != nil {
		return nil, err
	}
	return r.Options(), nil
}
