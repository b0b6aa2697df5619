// Command prog encodes and decodes JSON and CSV.
package main

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

type rec struct {
	ID    int             `json:"id"`
	Tags  []string        `json:"tags,omitempty"`
	Score float64         `json:"score"`
	Extra json.RawMessage `json:"extra,omitempty"`
}

func main() {
	dec := json.NewDecoder(os.Stdin)
	var recs []rec
	for {
		var r rec
		err := dec.Decode(&r)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		recs = append(recs, r)
	}
	out, _ := json.Marshal(recs)
	fmt.Println(string(out))
	m := map[string]any{"zeta": 1, "alpha": []any{true, nil, 2.5, "s"}, "mid": map[string]int{"b": 2, "a": 1}}
	ind, _ := json.MarshalIndent(m, "", "  ")
	fmt.Println(string(ind))
	var generic any
	json.Unmarshal([]byte(`{"n": 12345678901234567890, "u": "\u00e9\ud83d\ude42", "h": "<&>"}`), &generic)
	fmt.Println(generic)
	again, _ := json.Marshal(generic)
	fmt.Println(string(again))
	var bad rec
	err := json.Unmarshal([]byte(`{"id": "x"}`), &bad)
	fmt.Println(err)
	var se *json.SyntaxError
	fmt.Println(errors.As(json.Unmarshal([]byte(`{"id": 1,}`), &bad), &se), se.Offset)
	r := csv.NewReader(strings.NewReader("a,b\n\"q,1\",\"say \"\"x\"\"\"\n"))
	rows, err := r.ReadAll()
	fmt.Println(rows, err)
	w := csv.NewWriter(os.Stdout)
	w.WriteAll([][]string{{"x", "y,z"}, {"multi\nline", `q"`}})
}
