package procfs_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"
	"reflect"

	"github.com/xpuscope/xpuscope/internal/procfs"
)

// A process of the host's procfs (this one): its executable's name, and
// the mapped file that holds the code of a function, opened as a tracer
// opens it, from outside the process's mount namespace. In a container,
// Root is where the host's procfs is mounted (/host/proc).
func Example() {
	self := procfs.FS{Root: procfs.DefaultRoot}.Proc(os.Getpid())
	fmt.Println("alive:", self.Alive())
	fmt.Println("executable:", self.ExecutableName())

	maps, err := self.Maps()
	if err != nil {
		log.Fatal(err)
	}
	m, ok := maps.Find(uint64(reflect.ValueOf(Example).Pointer()))
	if !ok {
		log.Fatal("no mapping holds Example")
	}
	f, err := self.OpenMapped(m)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	fmt.Println("code of Example:", filepath.Base(m.Path), m.Perms)
	// Output:
	// alive: true
	// executable: procfs.test
	// code of Example: procfs.test r-xp
}
