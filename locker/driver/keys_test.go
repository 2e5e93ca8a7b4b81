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

func TestKeysIn(t *testing.T) {
	names := []string{"a", "b"}
	args := make([]any, 4)
	k := KeysIn(args, names)
	if k.Len() != 2 || k.Names()[1] != "b" || len(k.Args()) != 2 || k.Args()[0] != "a" || k.Args()[1] != "b" {
		t.Fatalf("KeysIn: %v %v", k.Names(), k.Args())
	}
	if n := testing.AllocsPerRun(100, func() { _ = KeysIn(args, names) }); n > 2 {
		t.Fatalf("KeysIn allocates %v, want at most the 2 boxes", n)
	}
}
