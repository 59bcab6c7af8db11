package pmu_test

import (
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/pmu"
)

// Starting the Source, and telling a machine that cannot count memory
// bandwidth from a fault. The sysfs and procfs here are a virtual
// machine's, written to a temporary directory so that the output is the
// same everywhere; on a node, leave WithSysfsRoot and WithProcRoot out
// (or point them at the host's, mounted into the agent).
func ExampleNew() {
	dir, err := os.MkdirTemp("", "pmu-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	for name, content := range map[string]string{
		"sys/bus/event_source/devices/software/type": "1\n",
		"sys/bus/event_source/devices/msr/type":      "9\n",
		"proc/cpuinfo": "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 143\nstepping\t: 8\n" +
			"flags\t\t: fpu tsc hypervisor\n\n",
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			log.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			log.Fatal(err)
		}
	}

	src, err := pmu.New(
		pmu.WithSysfsRoot(filepath.Join(dir, "sys")),
		pmu.WithProcRoot(filepath.Join(dir, "proc")),
		pmu.WithInterval(5*time.Second),
	)
	if errors.Is(err, xpuscope.ErrUnavailable) {
		// Soft skip: the error says what is missing.
		fmt.Println(strings.ReplaceAll(err.Error(), dir, "<root>"))
		return
	}
	if err != nil {
		log.Fatal(err)
	}
	defer src.Close()
	fmt.Println(src.Status().Describe())
	// Output:
	// pmu: no memory-controller PMU in <root>/sys/bus/event_source/devices (looked for uncore_imc_free_running_*, uncore_imc_*, amd_umc_*, amd_df; found msr, software): this is a virtual machine (GenuineIntel family 0x6 model 0x8f stepping 8, cpuinfo's hypervisor flag): hypervisors do not pass the uncore PMUs through
}
