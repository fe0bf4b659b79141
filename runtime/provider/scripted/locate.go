package scripted

import (
	"fmt"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"
)

// position is a 1-based line and column in a script; zero when unknown.
type position struct{ line, col int }

// positions maps the parts of a script (see rkey, pkey, ckey) to where they
// are written, so that validation errors, found after decoding, can point
// at the source. Parts written as inline tables have no entry; their errors
// fall back to the enclosing part.
type positions map[string]position

func rkey(i int, k string) string { return suffix(fmt.Sprintf("r%d", i), k) }

func pkey(i, j int, k string) string { return suffix(fmt.Sprintf("r%d.p%d", i, j), k) }

func ckey(i, j, c int, k string) string { return suffix(fmt.Sprintf("r%d.p%d.c%d", i, j, c), k) }

func suffix(base, k string) string {
	if k == "" {
		return base
	}
	return base + "." + k
}

func (ps positions) rule(i int) position { return ps[rkey(i, "")] }

func (ps positions) get(key string, fallback position) position {
	if p, ok := ps[key]; ok {
		return p
	}
	return fallback
}

// locate walks the TOML document and records the positions of [[rule]],
// [[rule.reply]] and [[rule.reply.tool_calls]] headers and of the keys
// directly inside them. It is best effort: the document has already been
// decoded successfully.
func locate(data []byte) positions {
	ps := positions{}
	var p unstable.Parser
	p.Reset(data)
	var ri, rj, rc int
	table := ""
	record := func(key string, n *unstable.Node) {
		if _, seen := ps[key]; seen {
			return
		}
		sh := p.Shape(n.Raw)
		ps[key] = position{line: sh.Start.Line, col: sh.Start.Column}
	}
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.ArrayTable, unstable.Table:
			parts, first := keyOf(e)
			table = strings.Join(parts, ".")
			if e.Kind != unstable.ArrayTable || first == nil {
				continue
			}
			switch table {
			case "rule":
				ri, rj, rc = ri+1, 0, 0
				record(rkey(ri, ""), first)
			case "rule.reply":
				rj, rc = rj+1, 0
				record(pkey(ri, rj, ""), first)
			case "rule.reply.tool_calls":
				rc++
				record(ckey(ri, rj, rc, ""), first)
			}
		case unstable.KeyValue:
			parts, first := keyOf(e)
			if first == nil {
				continue
			}
			switch table {
			case "rule":
				record(rkey(ri, parts[0]), first)
			case "rule.reply":
				record(pkey(ri, rj, parts[0]), first)
			case "rule.reply.tool_calls":
				record(ckey(ri, rj, rc, parts[0]), first)
			}
		}
	}
	return ps
}

func keyOf(n *unstable.Node) (parts []string, first *unstable.Node) {
	it := n.Key()
	for it.Next() {
		k := it.Node()
		if first == nil {
			first = k
		}
		parts = append(parts, string(k.Data))
	}
	return parts, first
}
