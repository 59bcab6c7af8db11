package training_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/genai/training"
)

// Find the training jobs on the node and read what they write: each job,
// its framework, and the log files read.
func Example() {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())

	src, err := training.New(training.WithMeterProvider(mp))
	if errors.Is(err, xpuscope.ErrUnavailable) {
		fmt.Println("unavailable:", err) // the procfs cannot be read
		return
	}
	if err != nil {
		log.Fatal(err)
	}
	defer src.Close()

	for _, j := range src.Status().Jobs {
		fmt.Printf("%s job (pid %d, %s):", j.Framework, j.PID, j.Executable)
		for _, f := range j.Files {
			fmt.Printf(" %s %s (run %s, %d records)", f.Format, f.Path, f.Run, f.Records)
		}
		fmt.Println(j.Problems)
	}
}

// An option out of its range makes New fail, naming it.
func ExampleWithReadLimit() {
	_, err := training.New(training.WithReadLimit(1))
	fmt.Println(err)
	// Output: training: WithReadLimit: the limit must be 65536 to 1073741824 bytes, got 1
}
