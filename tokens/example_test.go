package tokens_test

import (
	"fmt"

	"github.com/brainsurgeon/brainsurgeon/tokens"
)

func ExampleNew() {
	for _, name := range []string{"o200k", "chars/4"} {
		tok, err := tokens.New(name)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(tok.Name(), tok.Tokens([]byte("The quick brown fox jumps over the lazy dog.")))
	}
	// Output:
	// o200k 10
	// chars/4 11
}
