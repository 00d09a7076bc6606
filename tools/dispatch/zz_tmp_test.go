package dispatch_test

import (
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"
)

func TestTmpDist(t *testing.T) {
	w := benchWorld(t, "postgres")
	body := invokeBody()
	client := &http.Client{}
	var d []time.Duration
	for i := range 1500 {
		s := time.Now()
		if err := post(client, w.env.URL+"/v1/invoke", w.caller, body); err != nil {
			t.Fatal(err)
		}
		el := time.Since(s)
		d = append(d, el)
		if el > 3*time.Millisecond {
			fmt.Println("slow", i, el)
		}
	}
	slices.Sort(d)
	fmt.Println("p50", d[len(d)/2], "p90", d[len(d)*9/10], "p99", d[len(d)*99/100], "max", d[len(d)-1])
}
