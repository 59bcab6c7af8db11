package xpuscope_test

import (
	"errors"
	"fmt"

	"github.com/xpuscope/xpuscope"
)

// A Source's New error is either "unavailable here" (soft skip) or a fault.
func ExampleErrUnavailable() {
	err := xpuscope.Unavailablef("gpu: NVML library %s not found", "libnvidia-ml.so.1")
	if errors.Is(err, xpuscope.ErrUnavailable) {
		fmt.Println("skip:", err)
	}
	// Output: skip: gpu: NVML library libnvidia-ml.so.1 not found
}
