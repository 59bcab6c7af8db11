package intelpt_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/intelpt"
)

// Capturing two seconds of a stalled data loader's user-space control
// flow, on demand. Where the machine has no Intel PT (an AMD CPU, a
// virtual machine), New says so and nothing is captured: here the sysfs
// is an empty directory, so that the output is the same everywhere; on a
// node, leave WithSysfsRoot out.
func ExampleSource_Capture() {
	sysfs, err := os.MkdirTemp("", "intelpt-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(sysfs)

	src, err := intelpt.New(
		intelpt.WithSysfsRoot(sysfs),
		intelpt.WithCaptureDir("/var/lib/xpuscope/intelpt"),
		intelpt.WithMaxDuration(10*time.Second),
		intelpt.WithMaxAUXBytes(4<<20),
	)
	if errors.Is(err, xpuscope.ErrUnavailable) {
		fmt.Println("no Intel PT here")
		return
	}
	if err != nil {
		log.Fatal(err)
	}
	defer src.Close()

	res, err := src.Capture(context.Background(), intelpt.Request{
		Target:   intelpt.Process(4242),
		Duration: 2 * time.Second,
	})
	if errors.Is(err, intelpt.ErrRefused) {
		log.Fatal(err) // past a cap, or another capture is running
	}
	if err != nil {
		log.Fatal(err) // could not start, or broke off: err says why
	}
	fmt.Println(res.Dir, res.Stop, res.TraceBytes)
	// Output: no Intel PT here
}
