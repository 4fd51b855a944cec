package main

import "fmt"

// plural is n and noun, with an s unless n is 1: "1 topic", "2 topics".
func plural[N int | int64](n N, noun string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
