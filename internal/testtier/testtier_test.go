package testtier

import "testing"

func TestSized(t *testing.T) {
	t.Setenv("STATESIM_LONG", "")
	if Long() || Sized(1, 2) != 1 {
		t.Fatalf("without $STATESIM_LONG: Long %v, Sized(1, 2) = %d", Long(), Sized(1, 2))
	}
	t.Setenv("STATESIM_LONG", "1")
	want := 2
	if testing.Short() {
		want = 1
	}
	if Sized(1, 2) != want {
		t.Fatalf("with $STATESIM_LONG (short %v): Sized(1, 2) = %d, want %d", testing.Short(), Sized(1, 2), want)
	}
}
