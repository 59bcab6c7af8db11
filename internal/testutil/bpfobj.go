package testutil

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ObjectShape is what two builds of one BPF source for two architectures
// must share: the ELF's sections and the symbols their relocations name,
// and, as the loader (cilium/ebpf) reads them, the maps, the global
// variables, and each program's section, type, the maps it uses, the
// helpers it calls and the kernel types its CO-RE relocations name.
type ObjectShape struct {
	Sections    []string            // ELF sections, by name
	Relocations map[string][]string // the symbols the relocations of each ELF section name
	Maps        map[string]string   // type, key and value sizes, entries, flags
	Variables   []string
	Programs    map[string]string   // section and type
	MapUses     map[string][]string // the maps each program references
	Helpers     map[string][]string // the helpers each program calls
	CORETypes   map[string][]string // the kernel types each program's CO-RE relocations name, with the relocation's kind
}

var localID = regexp.MustCompile(`, local_id=\d+`)

// ShapeOf reads the shape of the BPF object at path, checking that it is
// a little-endian 64-bit BPF ELF.
func ShapeOf(t testing.TB, path string) ObjectShape {
	t.Helper()
	ef, err := elf.Open(path)
	require.NoError(t, err)
	defer ef.Close()
	require.Equal(t, elf.EM_BPF, ef.Machine, "%s: the ELF machine", path)
	require.Equal(t, elf.ELFCLASS64, ef.Class, path)
	require.Equal(t, elf.ELFDATA2LSB, ef.Data, path)
	s := ObjectShape{Relocations: map[string][]string{}, Maps: map[string]string{}, Programs: map[string]string{},
		MapUses: map[string][]string{}, Helpers: map[string][]string{}, CORETypes: map[string][]string{}}
	syms, err := ef.Symbols()
	require.NoError(t, err)
	for _, sec := range ef.Sections {
		if sec.Name == "" {
			continue
		}
		s.Sections = append(s.Sections, sec.Name)
		if sec.Type != elf.SHT_REL {
			continue
		}
		data, err := sec.Data()
		require.NoError(t, err)
		var names []string
		for off := 0; off+16 <= len(data); off += 16 {
			info := binary.LittleEndian.Uint64(data[off+8:])
			if i := int(elf.R_SYM64(info)); i > 0 && i <= len(syms) {
				names = append(names, syms[i-1].Name)
			}
		}
		s.Relocations[sec.Name] = sorted(names)
	}
	s.Sections = sorted(s.Sections)

	spec, err := ebpf.LoadCollectionSpec(path)
	require.NoError(t, err, "%s: the loader reads it", path)
	require.Equal(t, binary.LittleEndian, spec.ByteOrder)
	for name, m := range spec.Maps {
		s.Maps[name] = fmt.Sprintf("%v key %d value %d entries %d flags %#x", m.Type, m.KeySize, m.ValueSize, m.MaxEntries, m.Flags)
	}
	s.Variables = sorted(slices.Collect(maps.Keys(spec.Variables)))
	for name, p := range spec.Programs {
		s.Programs[name] = fmt.Sprintf("%s %v %v", p.SectionName, p.Type, p.AttachType)
		var uses, helpers, core []string
		for _, ins := range p.Instructions {
			if ins.IsLoadFromMap() || ins.OpCode.IsDWordLoad() && ins.Reference() != "" {
				uses = append(uses, ins.Reference())
			}
			if ins.IsBuiltinCall() {
				helpers = append(helpers, asm.BuiltinFunc(ins.Constant).String())
			}
			if r := btf.CORERelocationMetadata(&ins); r != nil {
				core = append(core, coreType(r))
			}
		}
		s.MapUses[name], s.Helpers[name], s.CORETypes[name] = sorted(uses), sorted(helpers), sorted(core)
	}
	return s
}

// coreType is a CO-RE relocation's kind and the type it names, without
// the field it reaches (the fields of struct pt_regs differ between
// architectures).
func coreType(r *btf.CORERelocation) string {
	s := localID.ReplaceAllString(r.String(), "")
	if i := strings.Index(s, "["); i >= 0 {
		if j := strings.LastIndex(s, "]"); j > i {
			s = s[:i] + s[j+1:]
		}
	}
	return s
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}

// SameShape checks that the BPF objects at a and b, one source built for
// two architectures, have the same shape (ObjectShape), and returns
// them. The helpers named in mayDiffer may be called by a program in one
// and not in the other (bpf_probe_read_user: where x86-64 reads an
// argument off the stack, arm64 has it in a register).
func SameShape(t testing.TB, a, b string, mayDiffer ...asm.BuiltinFunc) (ObjectShape, ObjectShape) {
	t.Helper()
	sa, sb := ShapeOf(t, a), ShapeOf(t, b)
	assert.NotEmpty(t, sa.Programs, a)
	assert.Equal(t, sa.Sections, sb.Sections, "ELF sections")
	sameKeys(t, "relocation section", sa.Relocations, sb.Relocations)
	sameKeys(t, "map", sa.Maps, sb.Maps)
	assert.Equal(t, sa.Variables, sb.Variables, "global variables")
	sameKeys(t, "program", sa.Programs, sb.Programs)
	sameKeys(t, "maps used by program", sa.MapUses, sb.MapUses)
	drop := func(m map[string][]string) map[string][]string {
		out := map[string][]string{}
		for k, v := range m {
			var kept []string
			for _, h := range v {
				if !slices.ContainsFunc(mayDiffer, func(f asm.BuiltinFunc) bool { return f.String() == h }) {
					kept = append(kept, h)
				}
			}
			out[k] = kept
		}
		return out
	}
	sameKeys(t, "helpers called by program", drop(sa.Helpers), drop(sb.Helpers))
	sameKeys(t, "CO-RE types of program", sa.CORETypes, sb.CORETypes)
	return sa, sb
}

// sameKeys checks that a and b have the same keys, and equal values
// under each, saying which differ.
func sameKeys[V any](t testing.TB, what string, a, b map[string]V) {
	t.Helper()
	for _, k := range sorted(slices.Concat(slices.Collect(maps.Keys(a)), slices.Collect(maps.Keys(b)))) {
		va, oka := a[k]
		vb, okb := b[k]
		if !oka || !okb {
			t.Errorf("%s %s: in one object only", what, k)
			continue
		}
		assert.Equal(t, va, vb, "%s %s", what, k)
	}
}
