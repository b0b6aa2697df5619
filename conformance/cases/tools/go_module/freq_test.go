package main

import "testing"

func TestTop(t *testing.T) {
	got := Top([]string{"b", "A", "a", "c", "B", "a"}, 2)
	if len(got) != 2 || got[0] != (WordCount{"a", 3}) || got[1] != (WordCount{"b", 2}) {
		t.Errorf("Top = %v", got)
	}
}

func TestTopFewer(t *testing.T) {
	if got := Top([]string{"x"}, 5); len(got) != 1 {
		t.Errorf("Top = %v", got)
	}
}
