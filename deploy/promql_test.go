package deploy

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The rules and dashboards are checked against the metric registry, so
// their PromQL must be read: which metric each selector names, which label
// names its matchers use, and which labels by, without, on, ignoring,
// group_left and group_right name. Prometheus's own parser is not in this
// module's dependencies; this small lexer reads what our queries use and
// refuses what it does not know (an unknown function, a selector without a
// metric name), so a query it cannot read fails the test instead of
// passing unchecked.

// query is what one PromQL expression refers to.
type query struct {
	selectors []selector
	grouping  []string // label names of by, without, on, ignoring, group_left, group_right
}

// selector is one vector selector: a metric name and the label names its
// matchers use.
type selector struct {
	metric string
	labels []string
}

type tokenKind int

const (
	identToken    tokenKind = iota // a name: metric, label, function, keyword
	numberToken                    // a number or a duration (5m, 1e-3, 0x1f)
	stringToken                    // "…", '…' or `…`
	variableToken                  // a Grafana variable: $node, ${node}, $__rate_interval
	punctToken                     // brackets, commas, operators
)

type token struct {
	kind tokenKind
	text string
}

func (t token) is(kind tokenKind, text string) bool { return t.kind == kind && t.text == text }

// functions are PromQL's functions (Prometheus 3.x), aggregations
// included.
var functions = setOf(
	// aggregations
	"sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values",
	"bottomk", "topk", "quantile", "limitk", "limit_ratio",
	// functions
	"abs", "absent", "absent_over_time", "acos", "acosh", "asin", "asinh", "atan", "atanh",
	"avg_over_time", "ceil", "changes", "clamp", "clamp_max", "clamp_min", "cos", "cosh",
	"count_over_time", "day_of_month", "day_of_week", "day_of_year", "days_in_month", "deg",
	"delta", "deriv", "double_exponential_smoothing", "exp", "floor", "histogram_avg",
	"histogram_count", "histogram_fraction", "histogram_quantile", "histogram_stddev",
	"histogram_stdvar", "histogram_sum", "holt_winters", "hour", "idelta", "increase",
	"info", "irate", "label_join", "label_replace", "last_over_time", "ln", "log10", "log2",
	"mad_over_time", "max_over_time", "min_over_time", "minute", "month", "pi",
	"predict_linear", "present_over_time", "quantile_over_time", "rad", "rate", "resets",
	"round", "scalar", "sgn", "sin", "sinh", "sort", "sort_by_label", "sort_by_label_desc",
	"sort_desc", "sqrt", "stddev_over_time", "stdvar_over_time", "sum_over_time", "tan",
	"tanh", "time", "timestamp", "vector", "year", "start", "end",
)

// aggregations may take by or without before their parenthesised body.
var aggregations = setOf("sum", "min", "max", "avg", "group", "stddev", "stdvar", "count",
	"count_values", "bottomk", "topk", "quantile", "limitk", "limit_ratio")

// groupingKeywords take a parenthesised list of label names.
var groupingKeywords = setOf("by", "without", "on", "ignoring", "group_left", "group_right")

// keywords are the other names that are not metrics: binary operators,
// modifiers and the special numbers.
var keywords = setOf("and", "or", "unless", "atan2", "bool", "offset", "inf", "nan")

func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }

// lex splits a PromQL expression (with Grafana variables) into tokens.
func lex(s string) ([]token, error) {
	var toks []token
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '#': // a comment, to the end of the line
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case isLetter(c):
			j := i + 1
			for j < len(s) && (isLetter(s[j]) || isDigit(s[j]) || s[j] == ':') {
				j++
			}
			toks = append(toks, token{identToken, s[i:j]})
			i = j
		case isDigit(c) || c == '.' && i+1 < len(s) && isDigit(s[i+1]):
			j := i + 1
			for j < len(s) {
				d := s[j]
				exponentSign := (d == '+' || d == '-') && (s[j-1] == 'e' || s[j-1] == 'E') &&
					!strings.HasPrefix(strings.ToLower(s[i:j]), "0x")
				if !isLetter(d) && !isDigit(d) && d != '.' && !exponentSign {
					break
				}
				j++
			}
			toks = append(toks, token{numberToken, s[i:j]})
			i = j
		case c == '"' || c == '\'' || c == '`':
			j := i + 1
			for j < len(s) && s[j] != c {
				if s[j] == '\\' && c != '`' {
					j++
				}
				j++
			}
			if j >= len(s) {
				return nil, fmt.Errorf("unterminated string at offset %d", i)
			}
			toks = append(toks, token{stringToken, s[i+1 : j]})
			i = j + 1
		case c == '$':
			j := i + 1
			if j < len(s) && s[j] == '{' {
				k := strings.IndexByte(s[j:], '}')
				if k < 0 {
					return nil, fmt.Errorf("unterminated ${ at offset %d", i)
				}
				j += k + 1
			} else {
				for j < len(s) && (isLetter(s[j]) || isDigit(s[j])) {
					j++
				}
			}
			if j == i+1 {
				return nil, fmt.Errorf("a lone $ at offset %d", i)
			}
			toks = append(toks, token{variableToken, s[i:j]})
			i = j
		default:
			if i+1 < len(s) && slices.Contains([]string{"!=", "=~", "!~", "==", "<=", ">="}, s[i:i+2]) {
				toks = append(toks, token{punctToken, s[i : i+2]})
				i += 2
				continue
			}
			if !strings.ContainsRune("(){}[],=<>+-*/%^@:", rune(c)) {
				return nil, fmt.Errorf("unexpected %q at offset %d", c, i)
			}
			toks = append(toks, token{punctToken, s[i : i+1]})
			i++
		}
	}
	return toks, nil
}

// parseQuery reads what expr refers to.
func parseQuery(expr string) (query, error) {
	toks, err := lex(expr)
	if err != nil {
		return query{}, err
	}
	peek := func(i int) token {
		if i < len(toks) {
			return toks[i]
		}
		return token{kind: -1}
	}
	var q query
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if t.is(punctToken, "{") {
			return q, fmt.Errorf("a selector without a metric name (at token %d)", i)
		}
		if t.kind != identToken {
			continue
		}
		next := peek(i + 1)
		keyword := strings.ToLower(t.text)
		switch {
		case groupingKeywords[keyword]:
			if next.is(punctToken, "(") {
				labels, end, err := nameList(toks, i+2, ")")
				if err != nil {
					return q, fmt.Errorf("%s: %w", t.text, err)
				}
				q.grouping = append(q.grouping, labels...)
				i = end
			} else if keyword != "group_left" && keyword != "group_right" {
				return q, fmt.Errorf("%s without a label list", t.text)
			}
		case keywords[keyword]:
		case next.is(punctToken, "("):
			if !functions[t.text] {
				return q, fmt.Errorf("unknown function %s", t.text)
			}
		case aggregations[t.text] && next.kind == identToken && groupingKeywords[strings.ToLower(next.text)]:
		default:
			sel := selector{metric: t.text}
			if next.is(punctToken, "{") {
				labels, end, err := matchers(toks, i+2)
				if err != nil {
					return q, fmt.Errorf("%s: %w", t.text, err)
				}
				sel.labels = labels
				i = end
			}
			q.selectors = append(q.selectors, sel)
		}
	}
	return q, nil
}

// nameList reads "a, b, c" up to the closing token, from toks[start]; it
// returns the names and the index of the closing token.
func nameList(toks []token, start int, closing string) ([]string, int, error) {
	var names []string
	for i := start; i < len(toks); i++ {
		if toks[i].is(punctToken, closing) {
			return names, i, nil
		}
		if toks[i].kind != identToken {
			return nil, 0, fmt.Errorf("want a label name, got %q", toks[i].text)
		}
		names = append(names, toks[i].text)
		switch {
		case i+1 < len(toks) && toks[i+1].is(punctToken, ","):
			i++
		case i+1 < len(toks) && !toks[i+1].is(punctToken, closing):
			return nil, 0, fmt.Errorf("want , or %s after %s, got %q", closing, toks[i].text, toks[i+1].text)
		}
	}
	return nil, 0, fmt.Errorf("no closing %s", closing)
}

// matchers reads `name op "value", …}` from toks[start]; it returns the
// label names and the index of the closing brace.
func matchers(toks []token, start int) ([]string, int, error) {
	var names []string
	for i := start; i < len(toks); i++ {
		if toks[i].is(punctToken, "}") {
			return names, i, nil
		}
		if i+2 >= len(toks) || toks[i].kind != identToken ||
			toks[i+1].kind != punctToken || !slices.Contains([]string{"=", "!=", "=~", "!~"}, toks[i+1].text) ||
			toks[i+2].kind != stringToken {
			return nil, 0, fmt.Errorf("want label=\"value\" in a selector, got %q", toks[i].text)
		}
		names = append(names, toks[i].text)
		i += 2
		switch {
		case i+1 < len(toks) && toks[i+1].is(punctToken, ","):
			i++
		case i+1 < len(toks) && !toks[i+1].is(punctToken, "}"):
			return nil, 0, fmt.Errorf("want , or } after %s, got %q", names[len(names)-1], toks[i+1].text)
		}
	}
	return nil, 0, fmt.Errorf("no closing }")
}

// labelValues matches a Grafana query variable's label_values(selector,
// label).
var labelValues = regexp.MustCompile(`^\s*label_values\((.+),\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)\s*$`)

// parseVariableQuery reads a Grafana Prometheus query variable. Only
// label_values(selector, label) is used here; anything else is refused.
func parseVariableQuery(s string) (query, error) {
	m := labelValues.FindStringSubmatch(s)
	if m == nil {
		return query{}, fmt.Errorf("want label_values(selector, label), got %q", s)
	}
	q, err := parseQuery(m[1])
	if err != nil {
		return q, err
	}
	// The label whose values are listed must be on the selected series.
	if len(q.selectors) != 1 {
		return q, fmt.Errorf("want one selector in %q", s)
	}
	q.selectors[0].labels = append(q.selectors[0].labels, m[2])
	return q, nil
}

func TestParseQuery(t *testing.T) {
	for _, tc := range []struct {
		expr      string
		selectors []selector
		grouping  []string
	}{
		{
			expr:      `hw_temperature_celsius{hw_type="gpu"} > 85`,
			selectors: []selector{{"hw_temperature_celsius", []string{"hw_type"}}},
		},
		{
			expr: `histogram_quantile(0.95, sum by (le, gen_ai_request_model) (rate(gen_ai_client_operation_duration_seconds_bucket{gen_ai_provider_name=~"$provider", error_type!=""}[$__rate_interval])))`,
			selectors: []selector{{"gen_ai_client_operation_duration_seconds_bucket",
				[]string{"gen_ai_provider_name", "error_type"}}},
			grouping: []string{"le", "gen_ai_request_model"},
		},
		{
			expr:      "avg_over_time(a_ratio[30m:1m]) < 1e-3\nand on (hw_id) # a comment: not_a_metric{x=\"y\"}\nsum(b) by (hw_id) > 0",
			selectors: []selector{{"a_ratio", nil}, {"b", nil}},
			grouping:  []string{"hw_id", "hw_id"},
		},
		{
			expr:      `sum without () (x_total unless x_total offset 10m) or vector(0) * a / on (k) group_left (j) b`,
			selectors: []selector{{"x_total", nil}, {"x_total", nil}, {"a", nil}, {"b", nil}},
			grouping:  []string{"k", "j"},
		},
		{
			expr:      `label_replace(up_total{a='it\'s'}, "dst", "$1", "src", "(.*)") > bool Inf`,
			selectors: []selector{{"up_total", []string{"a"}}},
		},
		{
			expr:      `m:recorded{job="x",} + 0x1F - 1.5e+3 - NaN`,
			selectors: []selector{{"m:recorded", []string{"job"}}},
		},
	} {
		q, err := parseQuery(tc.expr)
		if !assert.NoError(t, err, "parseQuery(%q)", tc.expr) {
			continue
		}
		assert.Equal(t, fmt.Sprint(tc.selectors), fmt.Sprint(q.selectors), "parseQuery(%q)'s selectors", tc.expr)
		assert.Equal(t, tc.grouping, q.grouping, "parseQuery(%q)'s grouping", tc.expr)
	}
}

func TestParseQueryRefuses(t *testing.T) {
	for _, expr := range []string{
		`{__name__="hw_power_watts"}`,     // no metric name to check
		`histogram_quantil(0.9, x)`,       // a misspelt function is not a metric
		`x{hw_type="gpu"`,                 // unclosed selector
		`x{hw_type=gpu}`,                  // matcher value not a string
		`sum by (le x) (y)`,               // no comma
		`sum by (le, x (y)`,               // no closing parenthesis
		`x{a="b" c="d"}`,                  // no comma between matchers
		`x{a="b}`,                         // unterminated string
		`rate(x[$])`,                      // lone $
		`x ! y`,                           // not PromQL
		`sum by hw_id (x)`,                // by without a list
		`rate(x[5m]) > ${__rate_interval`, // unterminated ${
	} {
		q, err := parseQuery(expr)
		assert.Error(t, err, "parseQuery(%q) = %v, want an error", expr, q)
	}
}

func TestParseVariableQuery(t *testing.T) {
	q, err := parseVariableQuery(`label_values(hw_gpu_memory_limit_bytes{hw_type="gpu", node=~"$node"}, hw_id)`)
	require.NoError(t, err)
	want := []selector{{"hw_gpu_memory_limit_bytes", []string{"hw_type", "node", "hw_id"}}}
	assert.Equal(t, fmt.Sprint(want), fmt.Sprint(q.selectors))
	for _, s := range []string{`label_values(node)`, `query_result(up)`, `label_values(a or b, node)`} {
		_, err := parseVariableQuery(s)
		assert.Error(t, err, "parseVariableQuery(%q): want an error", s)
	}
}
