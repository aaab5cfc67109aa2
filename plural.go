package chargeonce

import "strconv"

// Plural counts n of a regular noun for people: "1 exception",
// "2 exceptions", "0 exceptions". Every message that counts goes through
// it, so that none reads "1 exceptions".
func Plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
