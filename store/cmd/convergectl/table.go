package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore/schema"
)

// printTable prints objs as kubectl get prints objects: a header, then a
// row per object — its key, then the cells of the printer columns its
// kind declares (schema.Column), read from the kinds document the server
// declares (httpstore.WithKinds; convergestore -kinds). Objects of kinds
// with other columns start a table of their own, after a blank line. A
// kind without columns, or a server that declares no kinds, shows the
// revision instead.
func (c *cli) printTable(ctx context.Context, objs []store.Object[value]) error {
	rules, err := c.kinds(ctx)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 8, 3, ' ', 0)
	now := time.Now()
	var header []string
	for i, o := range objs {
		cols := rules.ColumnsFor(o.Key)
		h := []string{"KEY"}
		for _, col := range cols {
			h = append(h, col.Name)
		}
		if len(cols) == 0 {
			h = append(h, "REVISION")
		}
		if !slices.Equal(h, header) {
			if i > 0 {
				if err := tw.Flush(); err != nil {
					return err
				}
				fmt.Fprintln(c.stdout)
			}
			header = h
			fmt.Fprintln(tw, tabbed(h))
		}
		row := []string{keyField(o.Key)}
		for _, col := range cols {
			row = append(row, col.Cell(o.Value, now))
		}
		if len(cols) == 0 {
			row = append(row, strconv.FormatInt(o.Revision, 10))
		}
		fmt.Fprintln(tw, tabbed(row))
	}
	return tw.Flush()
}

// kinds returns the server's kind rules; none if it declares none.
func (c *cli) kinds(ctx context.Context) (*schema.Rules, error) {
	doc, err := c.s.Kinds(ctx)
	switch {
	case errors.Is(err, errors.ErrUnsupported):
		return nil, nil
	case err != nil:
		return nil, err
	}
	rules, err := schema.Parse(doc)
	if err != nil {
		return nil, fmt.Errorf("the kinds the server declares: %w", err)
	}
	return rules, nil
}

// tabbed joins cells with tabs, for a tabwriter; a cell's own tabs and
// newlines are written as spaces, so a cell never splits a row.
func tabbed(cells []string) string {
	out := make([]byte, 0, 64)
	for i, cell := range cells {
		if i > 0 {
			out = append(out, '\t')
		}
		for _, r := range cell {
			if r == '\t' || r == '\n' || r == '\r' {
				r = ' '
			}
			out = append(out, string(r)...)
		}
	}
	return string(out)
}
