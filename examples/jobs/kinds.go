package main

import (
	_ "embed"

	"github.com/converge-go/converge/store/apistore"
	"github.com/converge-go/converge/store/apistore/schema"
)

// kindRules are the rules of a job, in the declarative form of
// store/apistore/schema: written once, in kinds.json, which the daemon's
// own store compiles into its layer's admission and a convergestore
// holding the jobs (-store-server) loads:
//
//	convergestore -dir DIR -kinds examples/jobs/kinds.json
//
// A spec that breaks them (no command, negative retries or timeout, an
// unknown field) is refused where it is written, naming the field, and
// never reaches the reconciler.
//
//go:embed kinds.json
var kindRules []byte

// admission returns the layer's options that admit jobs by kindRules.
func admission() ([]apistore.Option[*Job], error) {
	r, err := schema.Parse(kindRules)
	if err != nil {
		return nil, err
	}
	return schema.OptionsOf[*Job](r), nil
}
