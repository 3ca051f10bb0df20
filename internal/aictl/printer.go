package aictl

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/client-go/util/jsonpath"
	"sigs.k8s.io/yaml"

	"aicli.dev/aicli/internal/apischema"
)

// column is one CRD print column with its parsed JSONPath.
type column struct {
	name string
	typ  string
	path *jsonpath.JSONPath
}

// tablePrinter prints objects of one resource as kubectl does: NAME, then the
// CRD's printer columns (priority 0, or all with wide), NAMESPACE first when
// listing all namespaces.
type tablePrinter struct {
	withNamespace bool
	columns       []column
	now           func() time.Time
}

func newTablePrinter(res *apischema.Resource, wide, withNamespace bool) (*tablePrinter, error) {
	p := &tablePrinter{withNamespace: withNamespace, now: time.Now}
	for _, c := range res.PrintColumns {
		if c.Priority > 0 && !wide {
			continue
		}
		jp := jsonpath.New(c.Name).AllowMissingKeys(true)
		if err := jp.Parse("{" + c.JSONPath + "}"); err != nil {
			return nil, fmt.Errorf("print column %s: %w", c.Name, err)
		}
		p.columns = append(p.columns, column{name: c.Name, typ: c.Type, path: jp})
	}
	return p, nil
}

// newTabWriter returns kubectl's table layout.
func newTabWriter(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
}

func (p *tablePrinter) header() []string {
	h := make([]string, 0, len(p.columns)+2)
	if p.withNamespace {
		h = append(h, "NAMESPACE")
	}
	h = append(h, "NAME")
	for _, c := range p.columns {
		h = append(h, strings.ToUpper(c.name))
	}
	return h
}

func (p *tablePrinter) row(obj *unstructured.Unstructured) []string {
	r := make([]string, 0, len(p.columns)+2)
	if p.withNamespace {
		r = append(r, obj.GetNamespace())
	}
	r = append(r, obj.GetName())
	now := p.now()
	for _, c := range p.columns {
		r = append(r, c.cell(obj.Object, now))
	}
	return r
}

// cell evaluates the column like the API server's CRD table convertor: the
// first result, formatted by the column type; missing values print as
// "<none>". Unlike the convertor, a string column whose path yields several
// values (`.spec.tools[*].name`) prints them all, comma-separated.
func (c column) cell(obj map[string]any, now time.Time) string {
	results, err := c.path.FindResults(obj)
	if err != nil || len(results) == 0 || len(results[0]) == 0 {
		return "<none>"
	}
	if c.typ == "string" && len(results[0]) > 1 {
		vals := make([]string, 0, len(results[0]))
		for _, r := range results[0] {
			vals = append(vals, fmt.Sprint(r.Interface()))
		}
		return strings.Join(vals, ",")
	}
	v := results[0][0].Interface()
	if v == nil {
		return "<none>"
	}
	switch c.typ {
	case "date":
		if s, ok := v.(string); ok {
			t, err := time.Parse(time.RFC3339, s)
			if err != nil {
				return s
			}
			return duration.HumanDuration(now.Sub(t))
		}
	case "integer":
		switch n := v.(type) {
		case int64:
			return strconv.FormatInt(n, 10)
		case float64:
			return strconv.FormatInt(int64(n), 10)
		}
	case "number":
		switch n := v.(type) {
		case int64:
			return strconv.FormatInt(n, 10)
		case float64:
			return strconv.FormatFloat(n, 'f', -1, 64)
		}
	case "boolean":
		if b, ok := v.(bool); ok {
			return strconv.FormatBool(b)
		}
	}
	switch x := v.(type) {
	case string:
		return x
	case map[string]any, []any:
		b, _ := json.Marshal(x)
		return string(b)
	default:
		return fmt.Sprint(x)
	}
}

// printTable writes rows for objs, with the header when header is true.
func (p *tablePrinter) printTable(w io.Writer, objs []unstructured.Unstructured, header bool) error {
	tw := newTabWriter(w)
	if header {
		writeRow(tw, p.header())
	}
	for i := range objs {
		writeRow(tw, p.row(&objs[i]))
	}
	return tw.Flush()
}

func writeRow(w io.Writer, cells []string) {
	_, _ = io.WriteString(w, strings.Join(cells, "\t")+"\n")
}

// printObjects prints objs in a structured format: json, yaml or name. A
// single object (asList false) prints bare; several print as a List.
func printObjects(w io.Writer, format string, objs []unstructured.Unstructured, asList bool, res *apischema.Resource) error {
	switch format {
	case "name":
		for i := range objs {
			fmt.Fprintln(w, ref(res, objs[i].GetName()))
		}
		return nil
	case "json", "yaml":
		var v any
		if asList {
			items := make([]any, len(objs))
			for i := range objs {
				items[i] = objs[i].Object
			}
			v = map[string]any{"apiVersion": "v1", "kind": "List", "metadata": map[string]any{"resourceVersion": ""}, "items": items}
		} else if len(objs) == 1 {
			v = objs[0].Object
		}
		return encode(w, format, v)
	default:
		return fmt.Errorf("unknown output format %q: allowed formats are json, yaml, name, wide", format)
	}
}

// printReply prints the reply v of a command that lists something other than
// objects: encoded for -o json or -o yaml, else as table prints it, or, when
// it has no items, the empty message on stderr.
func printReply(s IOStreams, format string, v any, items int, empty string, table func(io.Writer) error) error {
	switch {
	case format == "json" || format == "yaml":
		return encode(s.Out, format, v)
	case format != "":
		return fmt.Errorf("unknown output format %q: allowed formats are json, yaml (default: table)", format)
	case items == 0:
		_, err := fmt.Fprintln(s.ErrOut, empty)
		return err
	}
	return table(s.Out)
}

func encode(w io.Writer, format string, v any) error {
	if format == "json" {
		b, err := json.MarshalIndent(v, "", "    ")
		if err != nil {
			return fmt.Errorf("encoding json: %w", err)
		}
		_, err = fmt.Fprintln(w, string(b))
		return err
	}
	b, err := yaml.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding yaml: %w", err)
	}
	_, err = w.Write(b)
	return err
}
