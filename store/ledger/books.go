// Package ledger is the ledger: its rows and the statements that post them (post.go), the
// names of its books, and the check of its invariants (ledger-check): every transaction sums
// to zero, balances equal their books, batches equal their calls. The balances themselves
// (credit, key spends, reservations) are rows of package store, which a call locks.
package ledger

// The ledger: books of signed micro-USD (positive grows the book), written in transactions
// whose rows sum to zero. The platform's books are named by billing; these are the names the
// check verifies balances against.

// UserAvailable and UserReserved name an account's two credit books.
func UserAvailable(accountID string) string { return "user:" + accountID + ":available" }
func UserReserved(accountID string) string  { return "user:" + accountID + ":reserved" }

// The platform's books a call's breakdown is credited to (billing names them; ledger-check
// recomputes batches from invocations with them).
const (
	BookPlatformFees  = "platform:fees"
	BookPlatformInfra = "platform:infra"
	BookGas           = "platform:gas" // gas passed through: the platform's float that pays networks
)

// PartnerPayable names what is owed to a partner at one payout address.
func PartnerPayable(partnerID, payout string) string { return "partner:" + partnerID + ":" + payout }
