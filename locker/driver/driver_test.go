package driver_test

import (
	"context"
	"fmt"

	"github.com/locktag/locktag/locker/driver"
)

func ExampleNewScript() {
	s := driver.NewScript("return 1")
	fmt.Println(s.Hash(), s.Source())
	// Output: e0e1f9fabfc9d4800c877a703b823ac0578ff8db return 1
}

func ExampleIsPriority() {
	ctx := context.Background()
	fmt.Println(driver.IsPriority(ctx), driver.IsPriority(driver.WithPriority(ctx)))
	// Output: false true
}
