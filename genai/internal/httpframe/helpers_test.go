package httpframe

import (
	"fmt"
	"reflect"
	"strings"
)

// op is what an event does to a Conn.
type op uint8

const (
	opFeed op = iota
	opGap
	opClose
)

// event is one call on a Conn.
type event struct {
	op   op
	dir  Dir
	data string
	at   int64
}

// w is data the traced process wrote at time at; r data it read.
func w(at int64, data string) event { return event{op: opFeed, dir: Write, data: data, at: at} }
func r(at int64, data string) event { return event{op: opFeed, dir: Read, data: data, at: at} }

// gap says bytes were lost in direction d.
func gap(d Dir) event { return event{op: opGap, dir: d} }

// hangUp closes the connection.
func hangUp() event { return event{op: opClose} }

// result is what a Conn delivered and counted.
type result struct {
	exchanges []*Exchange
	stats     Stats
}

// play runs events through a new Conn; split cuts the data of each Feed
// into the pieces fed one by one, all at the event's time.
func play(cfg Config, evs []event, split func([]byte) [][]byte) result {
	var res result
	cfg.OnExchange = func(e *Exchange) { res.exchanges = append(res.exchanges, e) }
	cfg.Stats = nil
	c := New(cfg)
	apply(c, evs, split)
	res.stats = c.Stats()
	return res
}

// apply runs events through c; split cuts the data of each Feed into the
// pieces fed one by one, all at the event's time.
func apply(c *Conn, evs []event, split func([]byte) [][]byte) {
	for _, ev := range evs {
		switch ev.op {
		case opFeed:
			for _, p := range split([]byte(ev.data)) {
				c.Feed(ev.dir, p, ev.at)
			}
		case opGap:
			c.Gap(ev.dir)
		case opClose:
			c.Close()
		}
	}
}

// whole feeds each event's data in one piece.
func whole(p []byte) [][]byte { return [][]byte{p} }

// hdr builds Headers from name, value pairs.
func hdr(kv ...string) Headers {
	if len(kv)%2 != 0 {
		panic("hdr: odd number of strings")
	}
	var h Headers
	for i := 0; i < len(kv); i += 2 {
		h = append(h, Header{Name: kv[i], Value: kv[i+1]})
	}
	return h
}

// pieces builds Pieces from timestamp, data pairs.
func pieces(kv ...any) []Piece {
	var ps []Piece
	for i := 0; i < len(kv); i += 2 {
		ps = append(ps, Piece{At: int64(kv[i].(int)), Data: []byte(kv[i+1].(string))})
	}
	return ps
}

// chunk frames s as one chunk of a chunked body.
func chunk(s string) string { return fmt.Sprintf("%x\r\n%s\r\n", len(s), s) }

// lastChunk ends a chunked body with no trailer.
const lastChunk = "0\r\n\r\n"

// diffExchange describes how got differs from want, field by field, or
// returns "".
func diffExchange(got, want *Exchange) string {
	var b strings.Builder
	gv, wv := reflect.ValueOf(got).Elem(), reflect.ValueOf(want).Elem()
	for i := range gv.NumField() {
		g, w := gv.Field(i).Interface(), wv.Field(i).Interface()
		if !equalField(g, w) {
			fmt.Fprintf(&b, "\n\t%s: got %s, want %s", gv.Type().Field(i).Name, show(g), show(w))
		}
	}
	return b.String()
}

// equalField compares two field values; nil and empty slices are equal.
func equalField(a, b any) bool {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	if va.Kind() == reflect.Slice && va.Len() == 0 && vb.Len() == 0 {
		return true
	}
	if ps, ok := a.([]Piece); ok {
		qs := b.([]Piece)
		if len(ps) != len(qs) {
			return false
		}
		for i := range ps {
			if ps[i].At != qs[i].At || string(ps[i].Data) != string(qs[i].Data) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a, b)
}

// show prints a field value with byte slices as strings.
func show(v any) string {
	switch v := v.(type) {
	case []byte:
		return fmt.Sprintf("%q", v)
	case []Piece:
		parts := make([]string, len(v))
		for i, p := range v {
			parts[i] = fmt.Sprintf("{%d %q}", p.At, p.Data)
		}
		return "[" + strings.Join(parts, " ") + "]"
	}
	return fmt.Sprintf("%+v", v)
}

// checkExchanges compares delivered exchanges with the wanted ones.
func checkExchanges(got []*Exchange, want []Exchange) []string {
	var errs []string
	if len(got) != len(want) {
		errs = append(errs, fmt.Sprintf("%d exchanges, want %d", len(got), len(want)))
	}
	for i := range min(len(got), len(want)) {
		if d := diffExchange(got[i], &want[i]); d != "" {
			errs = append(errs, fmt.Sprintf("exchange %d:%s", i, d))
		}
	}
	return errs
}
