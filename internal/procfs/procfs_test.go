package procfs

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

func TestExeBase(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"/usr/bin/python3.11", "python3.11"},
		{"/opt/app/train (deleted)", "train"},
		{"/", ""},
		{"", ""},
		{" (deleted)", " (deleted)"},
	} {
		if got := ExeBase(tc.in); got != tc.want {
			t.Errorf("ExeBase(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestParseComm(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"python\n", "python"},
		{"pt_main_thread", "pt_main_thread"},
		{"a\nb\n", "a"},
		{"", ""},
	} {
		if got := ParseComm([]byte(tc.in)); got != tc.want {
			t.Errorf("ParseComm(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestExecutableName(t *testing.T) {
	root := t.TempDir()
	mk := func(pid int) string {
		d := filepath.Join(root, strconv.Itoa(pid))
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	// exe link wins.
	d := mk(10)
	if err := os.Symlink("/usr/local/bin/vllm", filepath.Join(d, "exe")); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(d, "comm"), []byte("ignored\n"), 0o644)
	// comm fallback.
	d = mk(11)
	os.WriteFile(filepath.Join(d, "comm"), []byte("kworker\n"), 0o644)

	fs := FS{Root: root}
	for pid, want := range map[int]string{10: "vllm", 11: "kworker", 12: ""} {
		if got := fs.ExecutableName(pid); got != want {
			t.Errorf("ExecutableName(%d) = %q, want %q", pid, got, want)
		}
	}
	// The real procfs: this test binary.
	real := FS{Root: DefaultRoot}
	self, _ := os.Executable()
	if got, want := real.ExecutableName(os.Getpid()), filepath.Base(self); got != want {
		t.Errorf("ExecutableName(self) = %q, want %q", got, want)
	}
}

func FuzzParseComm(f *testing.F) {
	f.Add([]byte("python\n"))
	f.Add([]byte{})
	f.Add(make([]byte, 4096))
	f.Fuzz(func(t *testing.T, b []byte) {
		s := ParseComm(b)
		if len(s) > maxComm {
			t.Fatalf("len %d > %d", len(s), maxComm)
		}
	})
}

func FuzzExeBase(f *testing.F) {
	f.Add("/usr/bin/python3 (deleted)")
	f.Fuzz(func(t *testing.T, s string) {
		if len(ExeBase(s)) > len(s) {
			t.Fatal("grew")
		}
	})
}
