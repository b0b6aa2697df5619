// Command prog formats fixed instants in several zones.
package main

import (
	"fmt"
	"time"
)

func main() {
	t := time.Date(2024, 2, 28, 23, 30, 0, 0, time.UTC)
	fmt.Println(t, t.Add(time.Hour), t.AddDate(0, 0, 1).Format("2006-01-02 Mon"), t.YearDay())
	y, w := t.ISOWeek()
	fmt.Println(y, w, t.Weekday(), t.Format(time.RFC3339), t.Format(time.Kitchen), t.Unix())
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	ny, _ := time.LoadLocation("America/New_York")
	for _, m := range []time.Month{time.January, time.July} {
		p := time.Date(2023, m, 1, 12, 0, 0, 0, paris)
		name, off := p.Zone()
		fmt.Println(p, name, off, p.In(ny), p.In(ny).Format("MST"))
	}
	fmt.Println(time.Date(2023, 3, 26, 1, 30, 0, 0, time.UTC).In(paris))
	fmt.Println(time.Date(2023, 3, 26, 2, 30, 0, 0, paris))
	p, err := time.Parse("2006-01-02 15:04:05 -0700", "2023-07-04 12:00:00 +0200")
	fmt.Println(p.UTC(), err)
	_, err = time.Parse(time.RFC3339, "not a time")
	fmt.Println(err != nil)
	d, _ := time.ParseDuration("1h15m30.5s")
	fmt.Println(d, d.Seconds(), d.Round(time.Minute), d.Truncate(time.Hour))
	fmt.Println(time.Date(2024, 3, 10, 0, 0, 0, 0, time.UTC).Sub(time.Date(1999, 12, 31, 0, 0, 0, 0, time.UTC)).Hours() / 24)
	fixed := time.FixedZone("X", -(3*3600 + 1800))
	fmt.Println(t.In(fixed), time.Unix(0, 0).UTC(), time.UnixMilli(1700000000123).UTC())
}
