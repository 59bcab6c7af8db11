package ringpoll_test

import (
	"fmt"
	"time"

	"github.com/xpuscope/xpuscope/internal/ringpoll"
)

// A reader drains its ring, then asks how long to wait for the next batch.
func Example() {
	p := ringpoll.New(50 * time.Millisecond)
	for _, batch := range []int{12, 0, 0, 0, 5} {
		fmt.Println(p.Next(batch))
	}
	// Output:
	// 50ms
	// 100ms
	// 200ms
	// 400ms
	// 50ms
}
