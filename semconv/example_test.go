package semconv_test

import (
	"fmt"

	"github.com/xpuscope/xpuscope/semconv"
)

// Every name comes from the registry, with its kind and unit.
func ExampleMetrics() {
	for _, m := range semconv.Metrics() {
		if m.Name == semconv.HWPower.Name {
			fmt.Println(m.Name, m.Kind, m.Unit, m.Origin)
		}
	}
	// Output: hw.power Gauge W OpenTelemetry
}
