package keyexpr_test

import (
	"fmt"

	"github.com/locktag/locktag/keyexpr"
)

// A multi-key tag lists its templates in `keys`; mistakes are reported
// with the byte position in the tag.
func ExampleParseTag_keys() {
	spec, err := keyexpr.ParseTag(`keys:"acct:{body.from}, acct:{body.to}" wait:"1s"`)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, t := range spec.Templates() {
		fmt.Println(t)
	}
	_, err = keyexpr.ParseTag(`keys:"acct:{body.from},,acct:{body.to}"`)
	fmt.Println(err)
	// Output:
	// acct:{body.from}
	// acct:{body.to}
	// keyexpr: tag `keys:"acct:{body.from},,acct:{body.to}"`: field keys at byte 23: missing key: key template 2 of keys is empty
}
