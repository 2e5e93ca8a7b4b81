package driver

import "testing"

func TestKeys(t *testing.T) {
	k := NewKeys("a", "b", "c")
	if k.Len() != 3 || k.Names()[2] != "c" || k.Args()[1] != "b" {
		t.Fatalf("NewKeys: %v %v", k.Names(), k.Args())
	}
	f := k.First(1)
	if f.Len() != 1 || f.Names()[0] != "a" || f.Args()[0] != "a" {
		t.Fatalf("First(1): %v %v", f.Names(), f.Args())
	}
	if n := testing.AllocsPerRun(100, func() { _ = k.First(2) }); n != 0 {
		t.Fatalf("First allocates %v", n)
	}
	var z Keys
	if z.Len() != 0 {
		t.Fatal("zero Keys has keys")
	}
}
