package xpuscope_test

import (
	"errors"
	"fmt"

	"github.com/xpuscope/xpuscope"
)

// A Source's New error is either "unavailable here" (soft skip) or a fault.
func ExampleErrUnavailable() {
	err := fmt.Errorf("gpu: nvml: %w: libnvidia-ml.so.1 not found", xpuscope.ErrUnavailable)
	if errors.Is(err, xpuscope.ErrUnavailable) {
		fmt.Println("skip:", err)
	}
	// Output: skip: gpu: nvml: unavailable: libnvidia-ml.so.1 not found
}
