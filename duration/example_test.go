package duration_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/brainsurgeon/brainsurgeon/duration"
)

func ExampleParse() {
	for _, s := range []string{"24h", "1d", "6h30m", "5D", "1w2d"} {
		d, err := duration.Parse(s)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Printf("%s = %d ms\n", s, d.Milliseconds())
	}
	for _, s := range []string{"5x", "10m", "53w", "30m1h"} {
		_, err := duration.Parse(s)
		fmt.Printf("%v (syntax: %v, range: %v)\n",
			err, errors.Is(err, duration.ErrSyntax), errors.Is(err, duration.ErrRange))
	}
	// Output:
	// 24h = 86400000 ms
	// 1d = 86400000 ms
	// 6h30m = 23400000 ms
	// 5D = 432000000 ms
	// 1w2d = 777600000 ms
	// Invalid duration '5x'. Use m, h, d, or w (syntax: true, range: false)
	// Duration '10m' is too short: the minimum is 30m (syntax: false, range: true)
	// Duration '53w' is too long: the maximum is 52w (syntax: false, range: true)
	// Invalid duration '30m1h': unit 'h' comes after a smaller unit. Write units in the order w, d, h, m (syntax: true, range: false)
}

func ExampleFormat() {
	fmt.Println(duration.Format(52 * time.Hour))
	fmt.Println(duration.Format(36 * time.Hour))
	fmt.Println(duration.Format(90*time.Minute + 42*time.Second))
	fmt.Println(duration.Format(7 * duration.Day))
	fmt.Println(duration.Format(0))
	fmt.Println(duration.Format(-45 * time.Minute))
	// Output:
	// 2d 4h
	// 1d 12h
	// 1h 30m
	// 7d
	// 0m
	// -45m
}
