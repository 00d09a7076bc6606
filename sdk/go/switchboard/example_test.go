package switchboard_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/switchboard-hq/switchboard/sdk/go/switchboard"
)

// The examples run against the live test service; baseURL is its address (in your code,
// your deployment's, e.g. "https://switchboard.example").
var baseURL = func() string { return switchboard.Live.URL }

// readCode stands in for the agent reading its inbox.
func readCode(email string) string {
	code, _ := switchboard.MailedCode(email)
	return code
}

// Onboard by e-mail one-time code, then act with the key.
func ExampleClient_Verify() {
	ctx := context.Background()
	anon := switchboard.New(baseURL(), "")
	if err := anon.Signup(ctx, "example-agent@example.com"); err != nil {
		panic(err)
	}
	acct, err := anon.Verify(ctx, "example-agent@example.com", readCode("example-agent@example.com"))
	if err != nil {
		panic(err)
	}
	c := switchboard.New(baseURL(), acct.APIKey)
	info, err := c.Account(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println(info.Email, len(info.Keys), "key")
	// Output: example-agent@example.com 1 key
}

// Errors the service answers are *Error values with a code to switch on.
func ExampleError() {
	c := switchboard.New(baseURL(), "sb_test_not-a-real-key")
	_, err := c.ListKeys(context.Background())
	var e *switchboard.Error
	if errors.As(err, &e) {
		fmt.Println(e.Status, e.Code, e.RequestID != "")
	}
	// Output: 401 UNAUTHENTICATED true
}

// Look a token up by natural-language text.
func ExampleClient_ResolveToken() {
	ctx := context.Background()
	anon := switchboard.New(baseURL(), "")
	anon.Signup(ctx, "example-lookup@example.com")
	acct, _ := anon.Verify(ctx, "example-lookup@example.com", readCode("example-lookup@example.com"))

	c := switchboard.New(baseURL(), acct.APIKey)
	res, err := c.ResolveToken(ctx, switchboard.TokenQuery{Query: "usdc on base"})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Tokens[0].Ticker, res.Tokens[0].Chain, res.Tokens[0].Decimals)
	// Output: USDC base 6
}

// A write intent asks for the user's approval first; InvokeWithConfirmation does the round
// trip (CONFIRMATION_REQUIRED, then the same message with confirmRequestId).
func ExampleClient_InvokeWithConfirmation() {
	ctx := context.Background()
	anon := switchboard.New(baseURL(), "")
	anon.Signup(ctx, "example-writer@example.com")
	acct, _ := anon.Verify(ctx, "example-writer@example.com", readCode("example-writer@example.com"))
	c := switchboard.New(baseURL(), acct.APIKey)

	// A partner publishes a write intent (the example partner echoes the query) and activates it.
	intent, err := c.PublishIntent(ctx, switchboard.IntentInput{
		PublicIdentifier: "@example-exec", Name: "Exec", Description: "runs a command", Category: "EXECUTE",
		ToolEndpoint:     switchboard.Live.PartnerURL + "/rest",
		ParametersSchema: map[string]any{"type": "object", "properties": map[string]any{"query": map[string]any{"type": "string"}}, "required": []string{"query"}},
	})
	if err != nil {
		panic(err)
	}
	if _, err := c.SetActive(ctx, intent.ID, true); err != nil {
		panic(err)
	}

	inv, err := c.InvokeWithConfirmation(ctx, switchboard.InvokeInput{Message: "@example-exec restart the node"},
		func(_ context.Context, conf *switchboard.Confirmation) (bool, error) {
			fmt.Println("approve", conf.Handle, conf.Category, conf.Args["query"], "?")
			return true, nil // ask your user here
		})
	if err != nil {
		panic(err)
	}
	fmt.Println(inv.Success, string(inv.Result) != "")
	// Output:
	// approve @example-exec EXECUTE restart the node ?
	// true true
}
