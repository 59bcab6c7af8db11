package perfevent

import (
	"testing"
)

// FuzzParseFormat: a format file never panics the parser, and what it
// accepts places values only inside its own bits.
func FuzzParseFormat(f *testing.F) {
	for _, s := range []string{"config:0-7", "config:0-7,32-35,59-60", "config1:0-63", "config:8-15,32-55\n", "config:18", "config3:1", "config:", "config:7-0", "x:1"} {
		f.Add(s, uint64(0x1ff))
	}
	f.Fuzz(func(t *testing.T, s string, v uint64) {
		fm, err := ParseFormat(s)
		if err != nil {
			return
		}
		if fm.Mask == 0 {
			t.Fatalf("%q: accepted with no bits", s)
		}
		if fm.Width() < 64 {
			v &= 1<<fm.Width() - 1
		}
		p, err := fm.Place(v)
		if err != nil {
			t.Fatalf("%q: a value of the field's width refused: %v", s, err)
		}
		if p&^fm.Mask != 0 {
			t.Fatalf("%q: placed %#x outside the field %#x", s, p, fm.Mask)
		}
		if fm.Extract(p) != v {
			t.Fatalf("%q: Extract(Place(%#x)) = %#x", s, v, fm.Extract(p))
		}
		if again, err := ParseFormat(fm.String()); err != nil || again != fm {
			t.Fatalf("%q: String %q does not read back: %v", s, fm.String(), err)
		}
	})
}

// FuzzParseTerms: an event string never panics the parser, is bounded,
// and what it accepts writes back to the same terms.
func FuzzParseTerms(f *testing.F) {
	for _, s := range []string{"event=0x04,umask=0x03", "event=0xff,umask=0x20\n", "edge,inv=0", "config=0x1234,config1=5", "event=", "=", ",,", "a=0xffffffffffffffff"} {
		f.Add(s)
	}
	formats := map[string]Format{"event": {Config, 0xff | 0xf<<32}, "umask": {Config, 0xff00}, "edge": {Config, 1 << 18}}
	f.Fuzz(func(t *testing.T, s string) {
		terms, err := ParseTerms(s)
		if err != nil {
			return
		}
		if len(terms) == 0 || len(terms) > maxTerms {
			t.Fatalf("%q: %d terms", s, len(terms))
		}
		again, err := ParseTerms(FormatTerms(terms))
		if err != nil || len(again) != len(terms) {
			t.Fatalf("%q: FormatTerms %q does not read back: %v", s, FormatTerms(terms), err)
		}
		for i := range terms {
			if again[i] != terms[i] {
				t.Fatalf("%q: term %d %v read back as %v", s, i, terms[i], again[i])
			}
		}
		_, _ = Encode(formats, terms)
	})
}

// FuzzParseCPUList: a cpumask never panics the parser nor makes it list
// more CPUs than its bound.
func FuzzParseCPUList(f *testing.F) {
	for _, s := range []string{"0", "0,28", "0-3,8-11\n", "16383", "0-16383", "3-1", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cpus, err := ParseCPUList(s)
		if err != nil {
			return
		}
		if len(cpus) == 0 || len(cpus) > maxCPUs {
			t.Fatalf("%q: %d CPUs", s, len(cpus))
		}
		for i := 1; i < len(cpus); i++ {
			if cpus[i] <= cpus[i-1] {
				t.Fatalf("%q: not ascending and unique: %v", s, cpus[:i+1])
			}
		}
	})
}

// FuzzScaleUnit: a .scale and .unit pair never panics, and a byte count
// it accepts is positive and finite.
func FuzzScaleUnit(f *testing.F) {
	f.Add("6.103515625e-5", "MiB")
	f.Add("1", "B")
	f.Add("1e-300", "GiB")
	f.Add("x", "cycles")
	f.Fuzz(func(t *testing.T, scale, unit string) {
		s, err := ParseScale(scale)
		if err != nil {
			return
		}
		u, err := ParseUnit(unit)
		if err != nil {
			return
		}
		b, err := BytesPerCount(s, u)
		if err != nil {
			return
		}
		if !(b > 0) || b > 1e308 {
			t.Fatalf("%q %q: %v bytes a count", scale, unit, b)
		}
	})
}
