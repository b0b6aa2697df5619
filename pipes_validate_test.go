package svc

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
)

// from returns a stdin_from value.
func from(k int) *int { return &k }

// TestValidateStdinFrom: each rule of stdin_from (API.md, Interactive
// tasks) is invalid_request naming the field, and the forms it allows
// pass.
func TestValidateStdinFrom(t *testing.T) {
	pair := func(a, b *int) *Request {
		return &Request{Steps: []Step{Parallel(Task{Cmd: "a", StdinFrom: a}, Task{Cmd: "b", StdinFrom: b})}}
	}
	for _, tc := range []struct {
		name string
		req  *Request
		msg  string // "" for valid
	}{
		{"cycle", pair(from(1), from(0)), ""},
		{"one way", pair(nil, from(0)), ""},
		{"two pairs", &Request{Steps: []Step{Parallel(
			Task{Cmd: "i", StdinFrom: from(1)}, Task{Cmd: "s", StdinFrom: from(0)},
			Task{Cmd: "i", StdinFrom: from(3)}, Task{Cmd: "s", StdinFrom: from(2)})}}, ""},
		{"a chain", &Request{Steps: []Step{Parallel(
			Task{Cmd: "a"}, Task{Cmd: "b", StdinFrom: from(0)}, Task{Cmd: "c", StdinFrom: from(1)})}}, ""},
		{"a later step", &Request{Steps: []Step{Single(Task{Cmd: "gcc"}), pair(from(1), from(0)).Steps[0]}}, ""},

		{"single step", one(Task{Cmd: "a", StdinFrom: from(0)}), "steps[0].stdin_from: only in a parallel step"},
		{"single step in a later step", &Request{Steps: []Step{pair(nil, nil).Steps[0], Single(Task{Cmd: "a", StdinFrom: from(1)})}},
			"steps[1].stdin_from: only in a parallel step"},
		{"with stdin", &Request{Steps: []Step{Parallel(Task{Cmd: "a"}, Task{Cmd: "b", Stdin: "x", StdinFrom: from(0)})}},
			"steps[0][1].stdin_from: not together with a non-empty stdin"},
		{"out of range", pair(nil, from(2)), "steps[0][1].stdin_from: 2 is not a task of the step (0 to 1)"},
		{"negative", pair(from(-1), nil), "steps[0][0].stdin_from: -1 is not a task of the step (0 to 1)"},
		{"self", pair(from(0), nil), "steps[0][0].stdin_from: a task cannot feed itself"},
		{"parallel of one, self", &Request{Steps: []Step{Parallel(Task{Cmd: "a", StdinFrom: from(0)})}},
			"steps[0][0].stdin_from: a task cannot feed itself"},
		{"one producer feeding two", &Request{Steps: []Step{Parallel(
			Task{Cmd: "a"}, Task{Cmd: "b", StdinFrom: from(0)}, Task{Cmd: "c", StdinFrom: from(0)})}},
			"steps[0][2].stdin_from: task 0 feeds steps[0][1] already; a task feeds one task at most"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.req.Validate(DefaultLimits(), Profiles())
			if tc.msg == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) || e.Code != CodeInvalidRequest || e.Msg != tc.msg {
				t.Fatalf("Validate: %v, want invalid_request %q", err, tc.msg)
			}
		})
	}
}

// TestDecodeStdinFrom: stdin_from is an integer or null on the wire, and
// a task encodes it back as it came.
func TestDecodeStdinFrom(t *testing.T) {
	decode := func(v string) (*Request, error) {
		return DecodeRequest(strings.NewReader(`{"steps":[[{"cmd":"a","stdin_from":` + v + `},{"cmd":"b","stdin_from":0}]]}`))
	}
	for _, v := range []string{`"1"`, `1.5`, `1e0`, `true`, `[1]`, `{}`, `99999999999999999999`} {
		_, err := decode(v)
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeInvalidRequest || e.Msg != "steps[0][0].stdin_from: expected the index of a task of the step (an integer)" {
			t.Errorf("stdin_from %s: %v", v, err)
		}
	}
	req, err := decode(`null`)
	if err != nil || req.Steps[0].Tasks[0].StdinFrom != nil {
		t.Fatalf("null: %v, %+v", err, req)
	}
	// Range is Validate's: decoding takes any integer.
	for v, want := range map[string]int{"1": 1, "-3": -3, "7": 7, "-0": 0} {
		req, err := decode(v)
		if err != nil || req.Steps[0].Tasks[0].StdinFrom == nil || *req.Steps[0].Tasks[0].StdinFrom != want {
			t.Errorf("stdin_from %s: %v, %+v", v, err, req)
		}
	}
	req, err = decode("1")
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(req.Steps)
	if err != nil {
		t.Fatal(err)
	}
	if want := `[[{"cmd":"a","stdin_from":1},{"cmd":"b","stdin_from":0}]]`; string(b) != want {
		t.Errorf("encoded %s, want %s", b, want)
	}
	_, err = DecodeRequest(strings.NewReader(`{"steps":[[{"cmd":"a","stdin_from":1,"stdin_from":1}]]}`))
	if err == nil || !strings.Contains(err.Error(), `duplicate field "stdin_from"`) {
		t.Errorf("duplicate: %v", err)
	}
}

// TestStepKeysStdinFrom: stdin_from is part of a step's key, after the
// fields every task has, so a step without it keeps its key
// (TestStepKeysGolden); which task feeds which tells keys apart.
func TestStepKeysStdinFrom(t *testing.T) {
	const (
		plain = `{"cache": true, "steps": [[{"cmd": "./interactor"}, {"cmd": "./solution"}]]}`
		cycle = `{"cache": true, "steps": [[{"cmd": "./interactor", "stdin_from": 1}, {"cmd": "./solution", "stdin_from": 0}]]}`
		half  = `{"cache": true, "steps": [[{"cmd": "./interactor"}, {"cmd": "./solution", "stdin_from": 0}]]}`
		other = `{"cache": true, "steps": [[{"cmd": "./interactor", "stdin_from": 1}, {"cmd": "./solution"}]]}`
		// The golden key of cycle: the encoding of stdin_from is a stored
		// format too (see cache_golden_test.go).
		keyCycle = "081016d630cfee73e574bca8505ba8421c18e79dbc988512e53599860c87467d"
	)
	keys := map[string]string{}
	for _, js := range []string{plain, cycle, half, other} {
		k := goldenKeys(t, js)
		if len(k) != 1 {
			t.Fatalf("%s: keys %q", js, k)
		}
		for prev, pk := range keys {
			if pk == k[0] {
				t.Errorf("%s and %s have the same key", prev, js)
			}
		}
		keys[js] = k[0]
	}
	if got := goldenKeys(t, cycle); !slices.Equal(got, []string{keyCycle}) {
		t.Errorf("cycle: key %q, want %q", got, keyCycle)
	}
}
