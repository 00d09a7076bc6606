// Generated from the Switchboard /openapi.json by openapi-typescript (scripts/generate.mjs).
// Do not edit by hand: run `npm run generate` (sdk/run checks it is current).

export interface paths {
    "/v1/account": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Get account
         * @description Show the account of the calling key: userId, e-mail, wallet addresses (EVM, Solana), whether signing on the agent's behalf is enabled, the calling key's scopes, limits and spend, the account's credit, and every key's metadata.
         */
        get: operations["account_get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/signup": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Sign up by e-mail
         * @description Start onboarding: e-mails an 8-digit one-time code (valid 10 minutes) to an inbox you can read, then call agent_verify with it. Always answers {ok:true}. Use it also to recover an account. Calling it again while a code is valid re-sends that same code (spaced out), never a new one. If you cannot read an inbox, do not retry: ask a human for an API key instead.
         */
        post: operations["agent_signup"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/verify": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Verify e-mail code
         * @description Finish onboarding with the code from agent_signup's e-mail. Creates the account (EVM and Solana wallets, a first API key with every scope) or, for an existing account, issues a fresh key for it. The apiKey is shown once: store it and send it as x-api-key.
         */
        post: operations["agent_verify"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/approvals": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List approvals
         * @description The calls that a spend policy sent to the account's owner for approval, newest first (pending: only those still waiting): a key's own calls and those of the keys minted under it. Only the owner decides, on the portal.
         */
        get: operations["approval_list"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/approvals/{request_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Read an approval
         * @description One approval by the requestId of its APPROVAL_REQUIRED answer: the rule that asked, the itemized charge, its state and expiry.
         */
        get: operations["approval_get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/balances": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Get wallet balances
         * @description Balances of the calling account's wallets: the primary embedded wallets (EVM and Solana) and any connected watch-only wallets, on ethereum, arbitrum, base, polygon, optimism, avalanche, bsc and solana (optional chains filter), with USD values. Zero balances and spam tokens are left out (spamHidden counts them). status PARTIAL means a chain or token could not be read or priced (failures and unpriced say which and why); totalUsd then covers only what is shown.
         */
        get: operations["get_balances"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/credit/topup": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Buy credit
         * @description Buy credit with the stablecoin, over x402. Call with amountUsd: the answer is PAYMENT_REQUIRED with an x402 exact requirement payable to Switchboard's treasury (the PAYMENT-REQUIRED header over REST; structuredContent over MCP). Pay it with any x402 client (the same request again with PAYMENT-SIGNATURE, or _meta["x402/payment"]), or send payment {signature, authorization} with confirmRequestId, or payWithWallet: true to pay from the embedded wallet. The credit lands once the transfer is confirmed, once per authorization; the answer has creditedUsd, the new creditUsd and the transaction hash.
         */
        post: operations["credit_topup"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/discover": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Discover services
         * @description Find services by what they do, in natural language: marketplace partner intents (called with invoke_partner_message and their @handle) and Switchboard's built-in capabilities (token resolution, prices, balances). Results are ranked by relevance and quality: verified partners first at equal relevance, then healthier ones (success rate, re-probes), each with its fee, its parametersSchema, how to invoke it, and its quality record.
         */
        get: operations["discover"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/invoke": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Invoke a partner by @handle
         * @description Call a marketplace partner named by its @handle in the message (find handles with discover). Intents whose parametersSchema is just {query} get the message text; others need `args` matching their parametersSchema. Write intents (SWAP, SEND, BRIDGE, ...) answer CONFIRMATION_REQUIRED first with the exact args and the most it can cost: ask the user, then call again with confirmRequestId. You are charged only when the partner succeeds; failures refund the reservation. When the partner answers success false (e.g. it needs more information), the result says so in partnerError: ask the user or refine the call.
         */
        post: operations["invoke_partner_message"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/keys": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List API keys
         * @description List the API keys this key may act on: itself and the keys minted under it, at any depth (the portal's signed-in owner sees every key of the account). Each with id, name, prefix, scopes, limits, parentId, createdAt, lastUsedAt, revokedAt. Never the secrets.
         */
        get: operations["api_key_list"];
        put?: never;
        /**
         * Create API key
         * @description Mint a new API key under the calling key. The new key's scopes must be a subset of the calling key's, and its limits can be at most the calling key's (omitted limits take the agent defaults, capped the same way). Its spending and calls also count against the calling key's limits and those of every key above it, so minting never raises what a tree of keys may spend or call. An account holds at most 50 live keys; an OAuth connection cannot mint keys. The secret is returned once; store it.
         */
        post: operations["api_key_create"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/keys/{key_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /**
         * Revoke API key
         * @description Revoke this key or a key minted under it, by id (from api_key_list); the keys minted under it are revoked with it. A revoked key stops working at once; revoking it again changes nothing. Other keys of the account are revoked by its owner on the portal.
         */
        delete: operations["api_key_revoke"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/partner/earnings": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Partner earnings
         * @description Your Partner earnings over a period (default the last 30 days): partner fees and calls per intent, fees accrued per payout address (payables on the ledger), and with intentId that intent's latest 20 calls with outcome, latency and output-schema validity.
         */
        get: operations["partner_earnings"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/partner/intents": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List partner intents
         * @description List your Partner profile and your intents, oldest first; archived ones only with includeArchived.
         */
        get: operations["partner_list_intents"];
        put?: never;
        /**
         * Publish partner intent
         * @description List a tool of yours on Switchboard's marketplace: creates one intent row, inactive and UNVERIFIED, owned by you (your read-only Partner profile is created on your first publish). Callers invoke it by its @handle once it is active; until then only your own account can invoke it. Next: partner_test_endpoint, then partner_set_active. Limits: 5 intents per hour per Partner; handles are unique forever; the endpoint must be HTTPS on a public host. Publishing is live on the test environment only. Returns the row.
         */
        post: operations["partner_publish_intent"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/partner/intents/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /**
         * Archive partner intent
         * @description Archive (soft-delete) one of your intents: it is deactivated and can no longer be activated, invoked or updated. Its handle stays taken forever. Archiving again changes nothing. Returns the row.
         */
        delete: operations["partner_archive_intent"];
        options?: never;
        head?: never;
        /**
         * Update partner intent
         * @description Change the editable fields of one of your intents: name, description, toolEndpoint, timeoutMs, feeRate, sampleQueries. Every other field is immutable and sending one is refused by name (publish a new intent to change it). Changing the endpoint of an active intent re-runs the negative-auth probe against the new endpoint and deactivates the intent unless it passes. Archived intents cannot be updated.
         */
        patch: operations["partner_update_intent"];
        trace?: never;
    };
    "/v1/partner/intents/{id}/active": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Activate or deactivate partner intent
         * @description Activate (active true) or deactivate (active false) one of your intents. Activation first runs the negative-auth probe: it succeeds only if an unsigned and a forged-signature request both get 401 or 403. An endpoint that accepts either is refused with the reason (CONFLICT, probe report in details); a timeout or network error is inconclusive (UNAVAILABLE): retry. Deactivation always works. Archived intents cannot be activated.
         */
        post: operations["partner_set_active"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/partner/intents/bundle": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Publish partner intents (bundle)
         * @description Publish up to 5 intents in one transaction: all are created (inactive, UNVERIFIED) or none is; on failure the error names the row (intents[i]) and why. Each row counts against the 5-per-hour publishing limit, and a bundle that would exceed it is refused whole. Fields as for partner_publish_intent.
         */
        post: operations["partner_publish_intent_bundle"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/partner/receipts/{request_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Partner call receipt
         * @description The signed receipt of a call to one of your intents, by its requestId: handle, the caller's pseudonymous userId for you, charges, timestamps and the SHA-256 of the result Switchboard relayed, signed with the service key (verify with switchboard verify-receipt or the partner kit).
         */
        get: operations["partner_receipt"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/partner/test-endpoint": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Test partner endpoint
         * @description Check an endpoint before activating it: a signed round trip (a real signed envelope with sample or given args) plus the negative-auth probe (one unsigned request, one with a forged signature; both must get 401 or 403). Give intentId (one of yours) or toolEndpoint (a URL, with bindingType and, for MCP_HTTP, publicIdentifier). Reports each step: HTTP status, latency, the parsed response envelope or why it did not parse, probe verdicts. Changes nothing.
         */
        post: operations["partner_test_endpoint"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/policy": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Read a spend policy
         * @description The spend policies that govern a key's calls (the account's and the key chain's), combined as effective, and what each cap window has spent and left. Without keyId: the calling key's. A refused call answers POLICY_DENIED naming the rule.
         */
        get: operations["policy_get"];
        /**
         * Narrow a key's spend policy
         * @description Set the whole spend policy of the calling key (no keyId) or of a key minted under it: caps per hour/day/30d in USD, a per-call maximum, allow and deny lists (by @handle, publisher partnerId, category), deny-by-default, and approval rules. A key may only make a policy stricter; the account's policy, and loosening any, is the owner's, on the portal.
         */
        put: operations["policy_set"];
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/tasks/{task_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * A task's status and answer
         * @description The status of a task a long-running call answered with and, once it has completed, the answer the call would have given.
         */
        get: operations["task_get"];
        put?: never;
        post?: never;
        /**
         * Cancel a task
         * @description Cancel a working task: its partner call is stopped and its hold refunded; nothing is charged. A task that has concluded is left as it is.
         */
        delete: operations["task_cancel"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/tokens/price": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Get a token's USD price
         * @description Current USD price of a token given by ticker, name or address, optionally on a chain (same query forms as resolve_token), as an exact decimal string. Providers are tried in order (Solana tokens: Jupiter, CoinGecko, DefiLlama; others: CoinGecko, DefiLlama) and a price older than the configured maximum age is never used. When no provider gives a usable price the call fails with UNAVAILABLE and details.providers lists each provider's reason: there is no number in that answer; say you cannot quote and retry later.
         */
        get: operations["get_price"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/tokens/resolve": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Resolve a token
         * @description Find a token by ticker ("USDC"), name ("wrapped ether"), contract address or Solana mint, optionally on one chain; natural text such as "usdc on base" works too. Chains: ethereum, arbitrum, base, polygon, optimism, avalanche, bsc, solana (aliases eth, arb, matic, op, avax, bnb, sol). Matches come most trusted first. An ambiguous ticker returns every match (e.g. USDC and bridged USDC.e on arbitrum): pick from context or ask. An unknown token returns an empty list. Spam-flagged tokens are shown with isSpam true and spamReason; never swap, bridge or send them. Unknown EVM addresses are read on chain; unknown Solana mints at Jupiter.
         */
        get: operations["resolve_token"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/usage": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Usage log
         * @description One page of the account's record of money movements, newest first: partner calls (kind call, their cost in chargeMicro) and on-chain movements (kind topup for credit bought, x402, send, proposed) with valueUsd, network and txHash. A root key reads the account's; a minted key, its own. Filter by kind and outcome; pass next as the cursor for the next page.
         */
        get: operations["usage_list"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/wallet/send": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Send from the embedded wallet
         * @description Send the native coin or a token from the account's embedded wallet to an address, on a balances chain (EVM) or Solana. The first call answers CONFIRMATION_REQUIRED with the USD value, the fee estimate (gasUsd) and an expiry: show it to the user; if they approve, call again with the same chain, token, to and amount and confirmRequestId (decline: true if they refuse). The owner's spend policies apply (caps, per-call maximum, recipients allow/deny, approvals). Signing must be on for the account (a human turns it on in the portal). The answer has the transaction hash and status submitted or confirmed.
         */
        post: operations["wallet_send"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/wallets/connected": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List connected wallets
         * @description List the account's connected watch-only wallets (address, family evm or svm, label, createdAt).
         */
        get: operations["connected_wallet_list"];
        put?: never;
        /**
         * Connect a watch-only wallet
         * @description Add a wallet by address (EVM 0x address or Solana address) to the account, watch-only: Switchboard holds no key for it and never signs with it; get_balances then includes it with walletType "connected". Adding an already connected address returns it unchanged. At most 20 connected wallets per account by default.
         */
        post: operations["connected_wallet_add"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/wallets/connected/{address}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /**
         * Remove a connected wallet
         * @description Remove a connected watch-only wallet by address; its balances stop counting. Primary wallets cannot be removed.
         */
        delete: operations["connected_wallet_remove"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/webhooks/deliveries": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List webhook deliveries
         * @description List the account's webhook deliveries, newest first, each with its webhook-id, event type, state (pending, delivered, failed), and every attempt (time, HTTP status, error). Filter by endpointId or state; page with before and beforeId (the previous page's nextBefore and nextBeforeId).
         */
        get: operations["webhook_delivery_list"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/webhooks/deliveries/{delivery_id}/replay": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Replay webhook delivery
         * @description Send a delivery again now (a failed one after its retries ran out, or a delivered one), with the same webhook-id and body and a fresh timestamp and signatures; it is retried with backoff again if it fails. Replaying a delivery of a disabled endpoint enables the endpoint again.
         */
        post: operations["webhook_delivery_replay"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/webhooks/endpoints": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List webhook endpoints
         * @description List the account's webhook endpoints: url, event types, whether one is failing or disabled, and the public key that verifies v1a signatures. Never the secrets.
         */
        get: operations["webhook_endpoint_list"];
        put?: never;
        /**
         * Create webhook endpoint
         * @description Register an https URL to receive the account's events as Standard Webhooks (signed POSTs with webhook-id, webhook-timestamp and webhook-signature). Choose eventTypes or omit them for all. Returns the endpoint's HMAC secret (whsec_..., verifies the v1 signature; shown once) and the service's public key (whpk_..., verifies v1a). Deliveries are retried with backoff for 24 hours; the same webhook-id is sent on every retry, so process each id once. Needs scope publish and a root key (or the portal).
         */
        post: operations["webhook_endpoint_create"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/webhooks/endpoints/{endpoint_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /**
         * Delete webhook endpoint
         * @description Delete a webhook endpoint by id (from webhook_endpoint_list), with its deliveries: nothing more is sent to it.
         */
        delete: operations["webhook_endpoint_delete"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/x402/fetch": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Fetch a paid resource (x402)
         * @description Request a URL and, when it answers 402 Payment Required (x402), pay it from the account's embedded EVM wallet and relay the answer. The price must be at most maxUsd (default 1 USD) and pass the owner's spend policies (caps, per-call maximum, allow/deny by host and recipient, approvals); otherwise nothing is signed. Signing must be on for the account (a human turns it on in the portal). The answer has the resource's status, headers and body, paidUsd and the payment's settlement.
         */
        post: operations["x402_fetch"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
}
export type webhooks = Record<string, never>;
export interface components {
    schemas: {
        Error: {
            error: {
                /** @enum {string} */
                code: "BAD_INPUT" | "PAYLOAD_TOO_LARGE" | "UNAUTHENTICATED" | "FORBIDDEN" | "NOT_FOUND" | "CONFLICT" | "CONFIRMATION_REQUIRED" | "PAYMENT_REQUIRED" | "SPEND_LIMIT" | "INSUFFICIENT_CREDITS" | "RATE_LIMITED" | "UPSTREAM" | "UNAVAILABLE" | "INTERNAL";
                /** @description what the code needs to act on (field problems, a quote, the partner's own error) */
                details?: {
                    [key: string]: unknown;
                };
                message: string;
            };
        };
    };
    responses: never;
    parameters: never;
    requestBodies: never;
    headers: never;
    pathItems: never;
}
export type $defs = Record<string, never>;
export interface operations {
    account_get: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Format: date-time */
                        createdAt: string;
                        credit: {
                            /** @description credit free to spend */
                            availableUsd: number;
                            /** @description what the calling key and the keys minted under it have spent in total (counted against its spendLimitUsd) */
                            keySpentUsd: number;
                            /** @description what the account's partner calls cost this calendar month (UTC), all keys */
                            monthSpentUsd: number;
                            /** @description reserved by invocations in flight */
                            reservedUsd: number;
                        };
                        /** @description credit free to spend (credit.availableUsd); buy more with credit_topup */
                        creditUsd: number;
                        email: string;
                        /** @description id of the key making this call */
                        keyId: string;
                        /** @description the keys this key may act on: itself and the keys minted under it (on the portal, every key of the account) */
                        keys: {
                            /** Format: date-time */
                            createdAt: string;
                            /** @description key id, for api_key_revoke */
                            id: string;
                            /** @description the partner integration whose connect page issued it */
                            integrationId?: string;
                            /** Format: date-time */
                            lastUsedAt?: string;
                            name: string;
                            /** @description the key it was minted under, whose limits its spending and calls count against too; absent for a root key (from agent_verify or the portal) */
                            parentId?: string;
                            /** @description first characters of the secret, to recognise it */
                            prefix: string;
                            rateLimitPerMinute: number;
                            /** Format: date-time */
                            revokedAt?: string;
                            scopes: string[];
                            spendLimitUsd: number;
                        }[];
                        limits: {
                            defaultRateLimitPerMinute: number;
                            /** @description what a key minted without limits gets (capped at the minting key's) */
                            defaultSpendLimitUsd: number;
                            /** @description the calling key's requests per minute */
                            rateLimitPerMinute: number;
                            /** @description the calling key's spend limit */
                            spendLimitUsd: number;
                        };
                        /** @description the account's latest 10 partner calls */
                        recentInvocations: {
                            /** Format: date-time */
                            at: string;
                            /** @description what it cost: the reserve kept plus partner and platform fees */
                            costUsd: number;
                            handle: string;
                            requestId: string;
                            /** @description awaiting_confirmation, dispatching, succeeded, failed, cancelled or outcome_unknown */
                            state: string;
                        }[];
                        /** @description scopes of the key making this call */
                        scopes: string[];
                        /** @description whether Switchboard may sign with the embedded wallets on the agent's behalf (off by default) */
                        signingEnabled: boolean;
                        userId: string;
                        wallets: {
                            /** @description EVM address (EIP-55) */
                            evm: string;
                            /** @description Solana address (base58) */
                            svm: string;
                        };
                    };
                };
            };
            /** @description Bad Request: BAD_INPUT */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: UNAUTHENTICATED */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: FORBIDDEN */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too Many Requests: RATE_LIMITED */
            429: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal Server Error: INTERNAL */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service Unavailable: UNAVAILABLE */
            503: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    agent_signup: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /**
                     * Format: email
                     * @description an e-mail inbox the agent can read; the code is sent there
                     */
                    email: string;
                };
            };
        };
        responses: {
            /** @description success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        ok: boolean;
                    };
                };
            };
            /** @description Bad Request: BAD_INPUT */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Request Entity Too Large: PAYLOAD_TOO_LARGE */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too Many Requests: RATE_LIMITED */
            429: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal Server Error: INTERNAL */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service Unavailable: UNAVAILABLE */
            503: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    agent_verify: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description the 8-digit code from the e-mail */
                    code: string;
                    /**
                     * Format: email
                     * @description the e-mail given to agent_signup
                     */
                    email: string;
                };
            };
        };
        responses: {
            /** @description success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @description the API key; shown only now, store it */
                        apiKey: string;
                        rateLimitPerMinute: number;
                        scopes: string[];
                        spendLimitUsd: number;
                        userId: string;
                        wallets: {
                            /** @description EVM address (EIP-55) */
                            evm: string;
                            /** @description Solana address (base58) */
                            svm: string;
                        };
                    };
                };
            };
            /** @description Bad Request: BAD_INPUT */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: UNAUTHENTICATED */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Request Entity Too Large: PAYLOAD_TOO_LARGE */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too Many Requests: RATE_LIMITED */
            429: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal Server Error: INTERNAL */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service Unavailable: UNAVAILABLE */
            503: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    approval_list: {
        parameters: {
            query?: {
                limit?: number;
                pending?: boolean;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        approvals: {
                            category: string;
                            /** @description the itemized most the call can cost: decimal USD strings by part (infrastructureUsd, partnerFeeUsd, platformFeeUsd, gasEstimateUsd or flatFeeUsd, totalUsd, maxChargeUsd) */
                            charge: {
                                [key: string]: string;
                            };
                            /** Format: date-time */
                            createdAt: string;
                            /** Format: date-time */
                            decidedAt?: string;
                            /** Format: date-time */
                            expiresAt: string;
                            handle: string;
                            /** @description the key that made the call */
                            keyId: string;
                            /** @description the most the call can cost, in USD */
                            maxUsd: string;
                            requestId: string;
                            /** @description the policy rule that asked for approval, e.g. approval.aboveUsd */
                            rule: string;
                            /** @enum {string} */
                            state: "pending" | "approved" | "declined" | "expired";
                        }[];
                    };
                };
            };
            /** @description Bad Request: BAD_INPUT */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: UNAUTHENTICATED */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: FORBIDDEN */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too Many Requests: RATE_LIMITED */
            429: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal Server Error: INTERNAL */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service Unavailable: UNAVAILABLE */
            503: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    approval_get: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                request_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        category: string;
                        /** @description the itemized most the call can cost: decimal USD strings by part (infrastructureUsd, partnerFeeUsd, platformFeeUsd, gasEstimateUsd or flatFeeUsd, totalUsd, maxChargeUsd) */
                        charge: {
                            [key: string]: string;
                        };
                        /** Format: date-time */
                        createdAt: string;
                        /** Format: date-time */
                        decidedAt?: string;
                        /** Format: date-time */
                        expiresAt: string;
                        handle: string;
                        /** @description the key that made the call */
                        keyId: string;
                        /** @description the most the call can cost, in USD */
                        maxUsd: string;
                        requestId: string;
                        /** @description the policy rule that asked for approval, e.g. approval.aboveUsd */
                        rule: string;
                        /** @enum {string} */
                        state: "pending" | "approved" | "declined" | "expired";
                    };
                };
            };
            /** @description Bad Request: BAD_INPUT */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: UNAUTHENTICATED */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: FORBIDDEN */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not Found: NOT_FOUND */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too Many Requests: RATE_LIMITED */
            429: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal Server Error: INTERNAL */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service Unavailable: UNAVAILABLE */
            503: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    get_balances: {
        parameters: {
            query?: {
                chains?: string[];
                query?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        balances: {
                            /** @description exact decimal amount of the token */
                            amount: string;
                            /** @description USD value, decimal string rounded to 6 places; absent when the token could not be priced (see unpriced) */
                            amountUsd?: string;
                            chain: string;
                            /** @description USD price used */
                            priceUsd?: string;
                            ticker: string;
                            /** @description contract or mint (natives: see resolve_token) */
                            tokenAddress: string;
                            /** @description address of the wallet holding it */
                            wallet: string;
                            /** @enum {string} */
                            walletType: "primary" | "connected";
                        }[];
                        /** @description chains (or tokens) that could not be read, and why */
                        failures: {
                            chain: string;
                            reason: string;
                            /** @description ticker, when only this token failed */
                            token?: string;
                        }[];
                        /** @description spam-flagged holdings left out */
                        spamHidden: number;
                        /**
                         * @description OK: every chain answered and every token was priced. PARTIAL: see failures and unpriced
                         * @enum {string}
                         */
                        status: "OK" | "PARTIAL";
                        /** @description sum of amountUsd, decimal string */
                        totalUsd: string;
                        /** @description tokens shown without a USD value */
                        unpriced: {
                            chain: string;
                            /** @description each price provider's reason */
                            providers: {
                                reason: string;
                                /** @description price provider */
                                source: string;
                            }[];
                            ticker: string;
                            tokenAddress: string;
                        }[];
                        /** @description wallets covered */
                        wallets: {
                            address: string;
                            /** @enum {string} */
                            family: "evm" | "svm";
                            /** @enum {string} */
                            walletType: "primary" | "connected";
                        }[];
                    };
                };
            };
            /** @description Bad Request: BAD_INPUT */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: UNAUTHENTICATED */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: FORBIDDEN */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too Many Requests: RATE_LIMITED */
            429: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal Server Error: INTERNAL */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Bad Gateway: UPSTREAM */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service Unavailable: UNAVAILABLE */
            503: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    credit_topup: {
        parameters: {
            query?: never;
            header?: {
                /** @description a unique key for this call (a UUID): a retry with the same key and the same body within 24 hours answers the first call's answer without running it again; the same key with a different body is 409 CONFLICT, and while the first call is still running 409 CONFLICT with Retry-After */
                "Idempotency-Key"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description how much credit to buy, in USD; paid as the same amount of the stablecoin */
                    amountUsd: number;
                    /**
                     * Format: uuid
                     * @description the requestId of the PAYMENT_REQUIRED answer being paid (x402 clients echo it in accepted.extra.requestId)
                     */
                    confirmRequestId?: string;
                    /** @description the signed EIP-3009 TransferWithAuthorization of the PAYMENT-REQUIRED requirement (x402 exact-scheme payload: signature + authorization); x402 clients send it as the PAYMENT-SIGNATURE header or _meta["x402/payment"] */
                    payment?: {
                        /** @description x402 clients: the accepts[] entry paid, as offered */
                        accepted?: {
                            amount?: string;
                            asset?: string;
                            extra?: {
                                [key: string]: Record<string, never> | unknown[] | string | number | boolean | null;
                            };
                            maxTimeoutSeconds?: number;
                            network?: string;
                            payTo?: string;
                            scheme?: string;
                        };
                        authorization: {
                            from: string;
                            nonce: string;
                            to: string;
                            validAfter: string;
                            validBefore: string;
                            value: string;
                        };
                        /**
                         * @description which authorization was signed; default ReceiveWithAuthorization (x402 clients sign TransferWithAuthorization)
                         * @enum {string}
                         */
                        primaryType?: "ReceiveWithAuthorization" | "TransferWithAuthorization";
                        /** @description the 65-byte EIP-712 signature, hex */
                        signature: string;
                    };
                    /** @description pay from the account's embedded EVM wallet (the account's signing must be on, and the key needs the wallet scope) instead of sending payment */
                    payWithWallet?: boolean;
                };
            };
        };
        responses: {
            /** @description success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @description the credit this top-up bought */
                        creditedUsd: number;
                        /** @description the account's available credit now */
                        creditUsd: number;
                        /** @description CAIP-2 chain id the transfer was made on */
                        network: string;
                        requestId: string;
                        /** @description the transfer's transaction */
                        txHash: string;
                    };
                };
            };
            /** @description Bad Request: BAD_INPUT */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: UNAUTHENTICATED */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Payment Required: PAYMENT_REQUIRED */
            402: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: FORBIDDEN */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not Found: NOT_FOUND */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Conflict: CONFLICT */
            409: {
                headers: {
                    /** @description seconds to wait before retrying, sent when a call with the same Idempotency-Key is still running */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Request Entity Too Large: PAYLOAD_TOO_LARGE */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too Many Requests: RATE_LIMITED */
            429: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal Server Error: INTERNAL */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Bad Gateway: UPSTREAM */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service Unavailable: UNAVAILABLE */
            503: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    discover: {
        parameters: {
            query: {
                category?: "SWAP" | "SEND" | "BRIDGE" | "EXECUTE" | "STAKE" | "MINT" | "TRANSFER" | "BURN" | "CLAIM" | "PRICE" | "BALANCE" | "QUERY" | "ANALYZE" | "OTHER";
                limit?: number;
                query: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        results: {
                            /** @description false only for your own intents not yet activated (only you can invoke them) */
                            active: boolean;
                            category: string;
                            description: string;
                            fee: {
                                /** @description decimal, in feeRateUnit: the most the partner is paid (it is paid what it reports, up to this) */
                                feeRate: string;
                                feeRateUnit: string;
                            };
                            handle: string;
                            /** @description how to call it */
                            invoke: string;
                            /** @description a built-in Switchboard capability: call its tool directly */
                            isCoreIntent: boolean;
                            name: string;
                            /** @description published by your account */
                            own: boolean;
                            parametersSchema: {
                                [key: string]: Record<string, never> | unknown[] | string | number | boolean | null;
                            };
                            /** @description what a call can cost, in words */
                            price: string;
                            /** @description how it has behaved over the last 30 days, from real calls and the continuous re-probe */
                            quality: {
                                /** @description finished calls in the window */
                                calls: number;
                                lastProbeAt: string | null;
                                lastProbeResult: string;
                                /** @description share of results that matched the outputSchema; null when none was checked */
                                outputSchemaConformance: number | null;
                                p50LatencyMs: number | null;
                                p95LatencyMs: number | null;
                                /** @description re-probes failed in a row */
                                probeFailures: number;
                                /** @description share of calls the partner answered successfully (0 to 1); null with no calls */
                                successRate: number | null;
                            };
                            verificationStatus: string;
                        }[];
                    };
                };
            };
            /** @description Bad Request: BAD_INPUT */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: UNAUTHENTICATED */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: FORBIDDEN */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too Many Requests: RATE_LIMITED */
            429: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal Server Error: INTERNAL */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service Unavailable: UNAVAILABLE */
            503: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    invoke_partner_message: {
        parameters: {
            query?: never;
            header?: {
                /** @description a unique key for this call (a UUID): a retry with the same key and the same body within 24 hours answers the first call's answer without running it again; the same key with a different body is 409 CONFLICT, and while the first call is still running 409 CONFLICT with Retry-After */
                "Idempotency-Key"?: string;
                /** @description respond-async: a call that may run long (an intent whose timeoutMs is above the deployment's task threshold) is answered 202 with a task at once; poll its Location (GET /v1/tasks/{task_id}) until its status leaves working, or DELETE it to cancel. Other calls answer as usual */
                Prefer?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description structured arguments matching the intent's parametersSchema (from discover); omit for intents that take only {query} */
                    args?: {
                        [key: string]: Record<string, never> | unknown[] | string | number | boolean | null;
                    };
                    /**
                     * Format: uuid
                     * @description for write intents: the requestId of a CONFIRMATION_REQUIRED answer, sent after the user approved it; for flat-fee intents: the requestId of the PAYMENT_REQUIRED quote being paid
                     */
                    confirmRequestId?: string;
                    /** @description for write intents, with confirmRequestId: the user declined that quote. It is closed: nothing is sent (a quote holds no reservation), and confirming it later answers CONFLICT */
                    decline?: boolean;
                    /** @description the request in natural language, naming exactly one partner by its @handle, e.g. '@weather forecast for Lisbon' */
                    message: string;
                    /** @description for flat-fee intents, asking for the quote: the wallet that will sign, so the quote's typedData is complete and signable as it is */
                    payer?: string;
                    /** @description for flat-fee intents, with confirmRequestId: the signed EIP-3009 authorization of the quote (x402 exact-scheme payload: signature + authorization) */
                    payment?: {
                        /** @description x402 clients: the accepts[] entry paid, as offered */
                        accepted?: {
                            amount?: string;
                            asset?: string;
                            extra?: {
                                [key: string]: Record<string, never> | unknown[] | string | number | boolean | null;
                            };
                            maxTimeoutSeconds?: number;
                            network?: string;
                            payTo?: string;
                            scheme?: string;
                        };
                        authorization: {
                            from: string;
                            nonce: string;
                            to: string;
                            validAfter: string;
                            validBefore: string;
                            value: string;
                        };
                        /**
                         * @description which authorization was signed; default ReceiveWithAuthorization (x402 clients sign TransferWithAuthorization)
                         * @enum {string}
                         */
                        primaryType?: "ReceiveWithAuthorization" | "TransferWithAuthorization";
                        /** @description the 65-byte EIP-712 signature, hex */
                        signature: string;
                    };
                    /** @description for flat-fee intents, with confirmRequestId and instead of payment: sign the quote with your embedded EVM wallet (the account's signing must be on); sending it is your confirmation */
                    payWithWallet?: boolean;
                };
            };
        };
        responses: {
            /** @description success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        attempts: number;
                        charge: {
                            /** @description network gas passed through (0 when the call has no on-chain step) */
                            gasMicro: number;
                            /** @description the infrastructure fee every call costs: reserved at the start, charged on success, refunded on failure */
                            infrastructureMicro: number;
                            /** @description charged for the partner (0 unless the call succeeded) */
                            partnerFeeMicro: number;
                            /** @description the platform's fee: its tier basis points on the routed value, or the per-call floor */
                            platformFeeMicro: number;
                            /** @description returned to your credit (the reservation, when the call failed) */
                            refundedMicro: number;
                            /** @description deprecated: the same as infrastructureMicro, kept for older clients */
                            reservedMicro: number;
                            /** @description the one bundled charge: infrastructure + partner fee + platform fee + gas (0 when nothing was charged) */
                            totalMicro: number;
                        };
                        /** @description the partner that answered */
                        handle: string;
                        /** @description whether the result matched the intent's outputSchema (absent when it has none); a mismatch is relayed but flagged */
                        outputSchemaValid?: boolean;
                        /** @description when success is false: the partner's own answer (e.g. it needs more information); nothing was charged for the partner */
                        partnerError?: {
                            /** @description the partner's short code, e.g. BAD_INPUT */
                            code: string;
                            /** @description the partner's message: ask the user or refine the call */
                            message: string;
                        };
                        /** @description flat-fee intents: the on-chain payment, settled to the partner on success or refunded, with transaction hashes */
                        payment?: {
                            /** @description atomic units */
                            amount: string;
                            explanation?: string;
                            network: string;
                            partner: string;
                            payer: string;
                            payTx: string;
                            platform: string;
                            refundTx?: string;
                            settleTx?: string;
                            /**
                             * @description settled: split to the partner and the treasury; refunded: returned to the payer
                             * @enum {string}
                             */
                            state: "held" | "settled" | "refunded";
                        };
                        /** @description Switchboard's signed receipt of this call (the service key, same scheme as envelopes): verify it with switchboard verify-receipt or the partner kit */
                        receipt?: {
                            receipt: {
                                charges: {
                                    gasMicro: number;
                                    partnerFeeMicro: number;
                                    platformFeeMicro: number;
                                    refundedMicro: number;
                                    reservedMicro: number;
                                    totalMicro: number;
                                };
                                createdAt: string;
                                finishedAt: string;
                                handle: string;
                                intentDefinitionId: string;
                                keyId: string;
                                requestId: string;
                                resultSha256: string;
                                success: boolean;
                                taskId?: string;
                                userId: string;
                            };
                            signature: string;
                        };
                        requestId: string;
                        /** @description the partner's JSON result, relayed as is (any JSON value) */
                        result: Record<string, never> | unknown[] | string | number | boolean | null;
                        success: boolean;
                        /** @description when this confirms the transactions a partner proposed (the requestId of their CONFIRMATION_REQUIRED): each as it stands, signed by the embedded wallet */
                        transactions?: {
                            chain: string;
                            explorerUrl?: string;
                            /** @description what it paid the network once mined, wei or lamports, from the wallet: gas passes through at its actual cost */
                            feeNative?: string;
                            reason?: string;
                            /** @description the send's record: the proposals' requestId and the transaction's index */
                            requestId: string;
                            /**
                             * @description submitted: signed, recorded and broadcast; confirmed: on chain; failed or dropped: it did not go through (reason); unsigned: never signed
                             * @enum {string}
                             */
                            status: "submitted" | "confirmed" | "failed" | "dropped" | "unsigned";
                            /** @description the transaction hash (EVM) or signature (Solana) */
                            txHash?: string;
                        }[];
                    };
                };
            };
            /** @description accepted: the call runs as a task (Prefer: respond-async); its hold is taken, and it is charged only if it succeeds */
            202: {
                headers: {
                    /** @description where the task is polled and cancelled */
                    Location?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Format: date-time */
                        createdAt: string;
                        /** @description when completed with an error: the error model object the call would have answered */
                        error?: {
                            code: string;
                            details?: {
                                [key: string]: Record<string, never> | unknown[] | string | number | boolean | null;
                            };
                            message: string;
                        };
                        /** Format: date-time */
                        lastUpdatedAt: string;
                        pollIntervalMs: number;
                        /** @description the call the task runs (its invocation) */
                        requestId: string;
                        /** @description when completed with an answer: the tool's answer, as the call would have given it */
                        result?: Record<string, never> | unknown[] | string | number | boolean | null;
                        /** @enum {string} */
                        status: "working" | "completed" | "failed" | "cancelled";
                        statusMessage?: string;
                        taskId: string;
                        ttlMs: number;
                    };
                };
            };
            /** @description Bad Request: BAD_INPUT */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: UNAUTHENTICATED */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Payment Required: PAYMENT_REQUIRED, SPEND_LIMIT, INSUFFICIENT_CREDITS */
            402: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: FORBIDDEN, POLICY_DENIED */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not Found: NOT_FOUND */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Conflict: CONFLICT, CONFIRMATION_REQUIRED, APPROVAL_REQUIRED, APPROVAL_PENDING */
            409: {
                headers: {
                    /** @description seconds to wait before retrying, sent when a call with the same Idempotency-Key is still running */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Request Entity Too Large: PAYLOAD_TOO_LARGE */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too Many Requests: RATE_LIMITED */
            429: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal Server Error: INTERNAL */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Bad Gateway: UPSTREAM */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service Unavailable: UNAVAILABLE */
            503: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    api_key_list: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        keys: {
                            /** Format: date-time */
                            createdAt: string;
                            /** @description key id, for api_key_revoke */
                            id: string;
                            /** @description the partner integration whose connect page issued it */
                            integrationId?: string;
                            /** Format: date-time */
                            lastUsedAt?: string;
                            name: string;
                            /** @description the key it was minted under, whose limits its spending and calls count against too; absent for a root key (from agent_verify or the portal) */
                            parentId?: string;
                            /** @description first characters of the secret, to recognise it */
                            prefix: string;
                            rateLimitPerMinute: number;
                            /** Format: date-time */
                            revokedAt?: string;
                            scopes: string[];
                            spendLimitUsd: number;
                        }[];
                    };
                };
            };
            /** @description Bad Request: BAD_INPUT */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: UNAUTHENTICATED */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: FORBIDDEN */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too Many Requests: RATE_LIMITED */
            429: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal Server Error: INTERNAL */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service Unavailable: UNAVAILABLE */
            503: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    api_key_create: {
        parameters: {
            query?: never;
            header?: {
                /** @description a unique key for this call (a UUID): a retry with the same key and the same body within 24 hours answers the first call's answer without running it again; the same key with a different body is 409 CONFLICT, and while the first call is still running 409 CONFLICT with Retry-After */
                "Idempotency-Key"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description issue the key for a partner integration (its /connect page): the scopes must be among the integration's */
                    integrationId?: string;
                    /** @description a label for the key */
                    name: string;
                    /** @description requests per minute; default the agent default, never above the calling key's */
                    rateLimitPerMinute?: number;
                    /** @description scopes for the new key; each must be a scope of the key making the call */
                    scopes: ("read" | "quote" | "swap" | "bridge" | "send" | "wallet" | "publish" | "partner")[];
                    /** @description total USD the key may spend; default the agent default, never above the calling key's */
                    spendLimitUsd?: number;
                };
            };
        };
        responses: {
            /** @description success */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Format: date-time */
                        createdAt: string;
                        /** @description key id, for api_key_revoke */
                        id: string;
                        /** @description the partner integration whose connect page issued it */
                        integrationId?: string;
                        /** Format: date-time */
                        lastUsedAt?: string;
                        name: string;
                        /** @description the key it was minted under, whose limits its spending and calls count against too; absent for a root key (from agent_verify or the portal) */
                        parentId?: string;
                        /** @description first characters of the secret, to recognise it */
                        prefix: string;
                        rateLimitPerMinute: number;
                        /** Format: date-time */
                        revokedAt?: string;
                        scopes: string[];
                        /** @description the API key; shown only now, store it */
                        secret: string;
                        spendLimitUsd: number;
                    };
                };
            };
            /** @description Bad Request: BAD_INPUT */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: UNAUTHENTICATED */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: FORBIDDEN */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not Found: NOT_FOUND */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Conflict: CONFLICT */
            409: {
                headers: {
                    /** @description seconds to wait before retrying, sent when a call with the same Idempotency-Key is still running */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Request Entity Too Large: PAYLOAD_TOO_LARGE */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too Many Requests: RATE_LIMITED */
            429: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal Server Error: INTERNAL */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service Unavailable: UNAVAILABLE */
            503: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    api_key_revoke: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                key_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Format: date-time */
                        createdAt: string;
                        /** @description key id, for api_key_revoke */
                        id: string;
                        /** @description the partner integration whose connect page issued it */
                        integrationId?: string;
                        /** Format: date-time */
                        lastUsedAt?: string;
                        name: string;
                        /** @description the key it was minted under, whose limits its spending and calls count against too; absent for a root key (from agent_verify or the portal) */
                        parentId?: string;
                        /** @description first characters of the secret, to recognise it */
                        prefix: string;
                        rateLimitPerMinute: number;
                        /** Format: date-time */
                        revokedAt?: string;
                        scopes: string[];
                        spendLimitUsd: number;
                    };
                };
            };
            /** @description Bad Request: BAD_INPUT */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: UNAUTHENTICATED */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: FORBIDDEN */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not Found: NOT_FOUND */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too Many Requests: RATE_LIMITED */
            429: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal Server Error: INTERNAL */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service Unavailable: UNAVAILABLE */
            503: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    partner_earnings: {
        parameters: {
            query?: {
                intentId?: string;
                since?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        byIntent: {
                            /** @description dispatched calls, whatever their outcome */
                            calls: number;
                            handle: string;
                            intentId: string;
                            /** @description partner fees earned (settled calls) */
                            partnerFeeUsd: number;
                            succeeded: number;
                        }[];
                        byPayout: {
                            partnerFeeUsd: number;
                            /** @description namespace:chain:address, or unassigned */
                            payout: string;
                        }[];
                        /** @description the intent's latest 20 calls, when intentId is given */
                        recent: {
                            /** Format: date-time */
                            at: string;
                            httpStatus?: number;
                            /** @description from dispatch to outcome */
                            latencyMs?: number;
                            outcomeCode?: string;
                            outputSchemaValid?: boolean;
                            partnerFeeUsd: number;
                            requestId: string;
                            /** @description succeeded, failed, cancelled, outcome_unknown or dispatching */
                            state: string;
                        }[];
                        /** Format: date-time */
                        since: string;
                        totalUsd: number;
                    };
                };
            };
            /** @description Bad Request: BAD_INPUT */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: UNAUTHENTICATED */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: FORBIDDEN */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not Found: NOT_FOUND */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too Many Requests: RATE_LIMITED */
            429: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal Server Error: INTERNAL */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service Unavailable: UNAVAILABLE */
            503: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    partner_list_intents: {
        parameters: {
            query?: {
                includeArchived?: boolean;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        intents: {
                            archivedAt: string | null;
                            bindingType: string;
                            capabilities: string[];
                            category: string;
                            /** Format: date-time */
                            createdAt: string;
                            description: string;
                            feeRate: number;
                            feeRateUnit: string;
                            /** @description what the continuous re-probe last found */
                            health: {
                                /** @description why the re-probe deactivated the intent; cleared by activating it again */
                                deactivatedReason?: string;
                                lastProbeAt: string | null;
                                /** @description e.g. 'probe PASS, health OK'; empty before the first re-probe */
                                lastProbeResult: string;
                                /** @description re-probes failed in a row (timeouts, 5xx); at the limit the intent is deactivated */
                                probeFailures: number;
                            };
                            id: string;
                            isActive: boolean;
                            isCoreIntent: boolean;
                            name: string;
                            /** @description the result's JSON Schema, as published */
                            outputSchema: {
                                [key: string]: Record<string, never> | unknown[] | string | number | boolean | null;
                            } | null;
                            ownerId: string;
                            /** @description the args' JSON Schema, as published */
                            parametersSchema: {
                                [key: string]: Record<string, never> | unknown[] | string | number | boolean | null;
                            };
                            partnerId: string;
                            payoutAddresses: {
                                [key: string]: string;
                            } | null;
                            /** @description a delegation intent's pricing, as published */
                            pricingShape: {
                                [key: string]: Record<string, never> | unknown[] | string | number | boolean | null;
                            } | null;
                            /** @description the @handle */
                            publicIdentifier: string;
                            sampleQueries: string[];
                            tier: string;
                            timeoutMs: number;
                            toolEndpoint: string;
                            /** Format: date-time */
                            updatedAt: string;
                            verificationStatus: string;
                        }[];
                        /** @description the read-only Partner profile, created on the first publish; null before it */
                        partner: {
                            /** Format: date-time */
                            createdAt: string;
                            id: string;
                            /** @description the account that publishes as this Partner */
                            ownerId: string;
                        } | null;
                    };
                };
            };
            /** @description Bad Request: BAD_INPUT */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: UNAUTHENTICATED */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: FORBIDDEN */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too Many Requests: RATE_LIMITED */
            429: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal Server Error: INTERNAL */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service Unavailable: UNAVAILABLE */
            503: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    partner_publish_intent: {
        parameters: {
            query?: never;
            header?: {
                /** @description a unique key for this call (a UUID): a retry with the same key and the same body within 24 hours answers the first call's answer without running it again; the same key with a different body is 409 CONFLICT, and while the first call is still running 409 CONFLICT with Retry-After */
                "Idempotency-Key"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /**
                     * @description REST (default): Switchboard POSTs the signed envelope; MCP_HTTP: Switchboard calls the MCP tool named exactly as the handle over Streamable HTTP, signature in headers. Immutable
                     * @enum {string}
                     */
                    bindingType?: "REST" | "MCP_HTTP";
                    /** @description what the intent does; MUTATES_USER_FUNDS and REQUIRES_USER_SIGNATURE need a write category. Immutable */
                    capabilities?: ("MUTATES_USER_FUNDS" | "REQUIRES_USER_SIGNATURE" | "READS_CHAIN_DATA" | "CALLS_THIRD_PARTY_API" | "RETURNS_EMBED" | "LONG_RUNNING")[];
                    /**
                     * @description write categories (SWAP SEND BRIDGE EXECUTE STAKE MINT TRANSFER BURN CLAIM) need the caller's confirmation and are never retried; idempotent ones (PRICE BALANCE QUERY ANALYZE OTHER) are retried once on 5xx or network error. Immutable
                     * @enum {string}
                     */
                    category: "SWAP" | "SEND" | "BRIDGE" | "EXECUTE" | "STAKE" | "MINT" | "TRANSFER" | "BURN" | "CLAIM" | "PRICE" | "BALANCE" | "QUERY" | "ANALYZE" | "OTHER";
                    /** @description what it does, for users and for the model that routes to it */
                    description: string;
                    /** @description price: USD per call (usd_per_call, flat_usdc, flat_stablecoin; at most 6 decimals) or basis points on routed value (bps; an integer up to 10000). 0 is valid */
                    feeRate: number;
                    /**
                     * @description unit of feeRate, default usd_per_call; flat_usdc and flat_stablecoin select the flat-fee path (paid on-chain before dispatch; args are only {query}). Immutable
                     * @enum {string}
                     */
                    feeRateUnit?: "usd_per_call" | "bps" | "flat_usdc" | "flat_stablecoin";
                    /** @description display label */
                    name: string;
                    /** @description JSON Schema the result should match; optional. Max 64 KiB, inline only. Immutable */
                    outputSchema?: ({
                        /** @description member name -> the JSON Schema of that member */
                        properties?: {
                            [key: string]: {
                                [key: string]: Record<string, never> | unknown[] | string | number | boolean | null;
                            };
                        };
                        /** @description members that must be present */
                        required?: string[];
                        /** @description the JSON type(s) allowed */
                        type?: string | string[];
                    } & {
                        [key: string]: Record<string, never> | unknown[] | string | number | boolean | null;
                    }) | null;
                    /** @description JSON Schema of type object for args; default: {query: string} required. Max 64 KiB, inline only. Immutable */
                    parametersSchema?: {
                        /** @description member name -> the JSON Schema of that member */
                        properties?: {
                            [key: string]: {
                                [key: string]: Record<string, never> | unknown[] | string | number | boolean | null;
                            };
                        };
                        /** @description members that must be present */
                        required?: string[];
                        /** @description the JSON type(s) allowed */
                        type?: string | string[];
                    } & {
                        [key: string]: Record<string, never> | unknown[] | string | number | boolean | null;
                    };
                    /** @description chain key -> receiver address. Keys: evm, svm, or namespace:chain (e.g. evm:8453); EVM values 0x + 40 hex (EIP-55 or lowercase), Solana values base58 of 32 bytes. Required when feeRate > 0 (an evm entry for flat-fee units). Immutable */
                    payoutAddresses?: {
                        [key: string]: string;
                    } | null;
                    /** @description required for tier delegation, must be absent for one_shot. Immutable */
                    pricingShape?: {
                        /** @description whether performance fees use a high-water mark */
                        highWaterMark?: boolean;
                        /** @description lockup period in seconds */
                        lockupSeconds?: number;
                        /** @description yearly management fee in basis points */
                        managementFeeBps?: number;
                        /** @description performance fee in basis points */
                        performanceFeeBps?: number;
                        /** @description redemption terms, e.g. anytime */
                        redemption?: string;
                    } | null;
                    /** @description the @handle callers invoke it by: @ plus 3-32 of a-z 0-9 _ -; unique forever (archived handles stay taken); immutable */
                    publicIdentifier: string;
                    /** @description example requests users might send (up to 10, each up to 200 characters); used in discovery and as test input */
                    sampleQueries?: string[];
                    /**
                     * @description one_shot (default) or delegation. Immutable
                     * @enum {string}
                     */
                    tier?: "one_shot" | "delegation";
                    /** @description per-call timeout in ms, default 30000 */
                    timeoutMs?: number;
                    /** @description HTTPS URL of the endpoint; its host must resolve only to public addresses */
                    toolEndpoint: string;
                };
            };
        };
        responses: {
            /** @description success */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        archivedAt: string | null;
                        bindingType: string;
                        capabilities: string[];
                        category: string;
                        /** Format: date-time */
                        createdAt: string;
                        description: string;
                        feeRate: number;
                        feeRateUnit: string;
                        /** @description what the continuous re-probe last found */
                        health: {
                            /** @description why the re-probe deactivated the intent; cleared by activating it again */
                            deactivatedReason?: string;
                            lastProbeAt: string | null;
                            /** @description e.g. 'probe PASS, health OK'; empty before the first re-probe */
                            lastProbeResult: string;
                            /** @description re-probes failed in a row (timeouts, 5xx); at the limit the intent is deactivated */
                            probeFailures: number;
                        };
                        id: string;
                        isActive: boolean;
                        isCoreIntent: boolean;
                        name: string;
                        /** @description the result's JSON Schema, as published */
                        outputSchema: {
                            [key: string]: Record<string, never> | unknown[] | string | number | boolean | null;
                        } | null;
                        ownerId: string;
                        /** @description the args' JSON Schema, as published */
                        parametersSchema: {
                            [key: string]: Record<string, never> | unknown[] | string | number | boolean | null;
                        };
                        partnerId: string;
                        payoutAddresses: {
                            [key: string]: string;
                        } | null;
                        /** @description a delegation intent's pricing, as published */
                        pricingShape: {
                            [key: string]: Record<string, never> | unknown[] | string | number | boolean | null;
                        } | null;
                        /** @description the @handle */
                        publicIdentifier: string;
                        sampleQueries: string[];
                        tier: string;
                        timeoutMs: number;
                        toolEndpoint: string;
                        /** Format: date-time */
                        updatedAt: string;
                        verificationStatus: string;
                    };
                };
            };
            /** @description Bad Request: BAD_INPUT */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: UNAUTHENTICATED */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: FORBIDDEN */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Conflict: CONFLICT */
            409: {
                headers: {
                    /** @description seconds to wait before retrying, sent when a call with the same Idempotency-Key is still running */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Request Entity Too Large: PAYLOAD_TOO_LARGE */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too Many Requests: RATE_LIMITED */
            429: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal Server Error: INTERNAL */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service Unavailable: UNAVAILABLE */
            503: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    partner_archive_intent: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        archivedAt: string | null;
                        bindingType: string;
                        capabilities: string[];
                        category: string;
                        /** Format: date-time */
                        createdAt: string;
                        description: string;
                        feeRate: number;
                        feeRateUnit: string;
                        /** @description what the continuous re-probe last found */
                        health: {
                            /** @description why the re-probe deactivated the intent; cleared by activating it again */
                            deactivatedReason?: string;
                            lastProbeAt: string | null;
                            /** @description e.g. 'probe PASS, health OK'; empty before the first re-probe */
                            lastProbeResult: string;
                            /** @description re-probes failed in a row (timeouts, 5xx); at the limit the intent is deactivated */
                            probeFailures: number;
                        };
                        id: string;
                        isActive: boolean;
                        isCoreIntent: boolean;
                        name: string;
                        /** @description the result's JSON Schema, as published */
                        outputSchema: {
                            [key: string]: Record<string, never> | unknown[] | string | number | boolean | null;
                        } | null;
                        ownerId: string;
                        /** @description the args' JSON Schema, as published */
                        parametersSchema: {
                            [key: string]: Record<string, never> | unknown[] | string | number | boolean | null;
                        };
                        partnerId: string;
                        payoutAddresses: {
                            [key: string]: string;
                        } | null;
                        /** @description a delegation intent's pricing, as published */
                        pricingShape: {
                            [key: string]: Record<string, never> | unknown[] | string | number | boolean | null;
                        } | null;
                        /** @description the @handle */
                        publicIdentifier: string;
                        sampleQueries: string[];
                        tier: string;
                        timeoutMs: number;
                        toolEndpoint: string;
                        /** Format: date-time */
                        updatedAt: string;
                        verificationStatus: string;
                    };
                };
            };
            /** @description Bad Request: BAD_INPUT */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: UNAUTHENTICATED */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: FORBIDDEN */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not Found: NOT_FOUND */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too Many Requests: RATE_LIMITED */
            429: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal Server Error: INTERNAL */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service Unavailable: UNAVAILABLE */
            503: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    partner_update_intent: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description immutable: sending it is refused; publish a new intent and archive this one */
                    bindingType?: string;
                    /** @description immutable: sending it is refused; publish a new intent and archive this one */
                    capabilities?: string[];
                    /** @description immutable: sending it is refused; publish a new intent and archive this one */
                    category?: string;
                    description?: string;
                    /** @description new price, in the intent's feeRateUnit */
                    feeRate?: number;
                    /** @description immutable: sending it is refused; publish a new intent and archive this one */
                    feeRateUnit?: string;
                    /** @description not changed here: use partner_set_active */
                    isActive?: boolean;
                    name?: string;
                    /** @description immutable: sending it is refused; publish a new intent and archive this one */
                    outputSchema?: {
                        /** @description member name -> the JSON Schema of that member */
                        properties?: {
                            [key: string]: {
                                [key: string]: Record<string, never> | unknown[] | string | number | boolean | null;
                            };
                        };
                        /** @description members that must be present */
                        required?: string[];
                        /** @description the JSON type(s) allowed */
                        type?: string | string[];
                    } & {
                        [key: string]: Record<string, never> | unknown[] | string | number | boolean | null;
                    };
                    /** @description immutable: sending it is refused; publish a new intent and archive this one */
                    parametersSchema?: {
                        /** @description member name -> the JSON Schema of that member */
                        properties?: {
                            [key: string]: {
                                [key: string]: Record<string, never> | unknown[] | string | number | boolean | null;
                            };
                        };
                        /** @description members that must be present */
                        required?: string[];
                        /** @description the JSON type(s) allowed */
                        type?: string | string[];
                    } & {
                        [key: string]: Record<string, never> | unknown[] | string | number | boolean | null;
                    };
                    /** @description immutable: sending it is refused; publish a new intent and archive this one */
                    payoutAddresses?: {
                        [key: string]: string;
                    };
                    /** @description immutable: sending it is refused; publish a new intent and archive this one */
                    pricingShape?: {
                        /** @description whether performance fees use a high-water mark */
                        highWaterMark?: boolean;
                        /** @description lockup period in seconds */
                        lockupSeconds?: number;
                        /** @description yearly management fee in basis points */
                        managementFeeBps?: number;
                        /** @description performance fee in basis points */
                        performanceFeeBps?: number;
                        /** @description redemption terms, e.g. anytime */
                        redemption?: string;
                    };
                    /** @description immutable: sending it is refused; publish a new intent and archive this one */
                    publicIdentifier?: string;
                    /** @description replaces the sample queries */
                    sampleQueries?: string[];
                    /** @description immutable: sending it is refused; publish a new intent and archive this one */
                    tier?: string;
                    timeoutMs?: number;
                    /** @description new HTTPS endpoint; on an active intent the negative-auth probe runs against it and the intent is deactivated unless it passes */
                    toolEndpoint?: string;
                    /** @description not changed by partners: the operator sets it */
                    verificationStatus?: string;
                };
            };
        };
        responses: {
            /** @description success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @description true when the new endpoint failed the probe and the intent was deactivated */
                        deactivated: boolean;
                        intent: {
                            archivedAt: string | null;
                            bindingType: string;
                            capabilities: string[];
                            category: string;
                            /** Format: date-time */
                            createdAt: string;
                            description: string;
                            feeRate: number;
                            feeRateUnit: string;
                            /** @description what the continuous re-probe last found */
                            health: {
                                /** @description why the re-probe deactivated the intent; cleared by activating it again */
                                deactivatedReason?: string;
                                lastProbeAt: string | null;
                                /** @description e.g. 'probe PASS, health OK'; empty before the first re-probe */
                                lastProbeResult: string;
                                /** @description re-probes failed in a row (timeouts, 5xx); at the limit the intent is deactivated */
                                probeFailures: number;
                            };
                            id: string;
                            isActive: boolean;
                            isCoreIntent: boolean;
                            name: string;
                            /** @description the result's JSON Schema, as published */
                            outputSchema: {
                                [key: string]: Record<string, never> | unknown[] | string | number | boolean | null;
                            } | null;
                            ownerId: string;
                            /** @description the args' JSON Schema, as published */
                            parametersSchema: {
                                [key: string]: Record<string, never> | unknown[] | string | number | boolean | null;
                            };
                            partnerId: string;
                            payoutAddresses: {
                                [key: string]: string;
                            } | null;
                            /** @description a delegation intent's pricing, as published */
                            pricingShape: {
                                [key: string]: Record<string, never> | unknown[] | string | number | boolean | null;
                            } | null;
                            /** @description the @handle */
                            publicIdentifier: string;
                            sampleQueries: string[];
                            tier: string;
                            timeoutMs: number;
                            toolEndpoint: string;
                            /** Format: date-time */
                            updatedAt: string;
                            verificationStatus: string;
                        };
                        notice?: string;
                        /** @description the negative-auth probe against the new endpoint of an active intent; null when none ran */
                        probe: {
                            reason: string;
                            steps: {
                                detail: string;
                                latencyMs: number;
                                /**
                                 * @description unsigned: no signature at all; forged_signature: a well-formed signature by a key that is not Switchboard's
                                 * @enum {string}
                                 */
                                request: "unsigned" | "forged_signature";
                                /** @description HTTP status of the answer, when one came */
                                status?: number;
                                /** @enum {string} */
                                verdict: "REJECTED" | "ACCEPTED" | "WRONG_STATUS" | "INCONCLUSIVE" | "BLOCKED";
                            }[];
                            /**
                             * @description PASS: both refused with 401/403; FAIL: a request was accepted or not clearly refused; INCONCLUSIVE: timeout or network error, retry
                             * @enum {string}
                             */
                            verdict: "PASS" | "FAIL" | "INCONCLUSIVE";
                        } | null;
                    };
                };
            };
            /** @description Bad Request: BAD_INPUT */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: UNAUTHENTICATED */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: FORBIDDEN */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not Found: NOT_FOUND */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Conflict: CONFLICT */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Request Entity Too Large: PAYLOAD_TOO_LARGE */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too Many Requests: RATE_LIMITED */
            429: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal Server Error: INTERNAL */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service Unavailable: UNAVAILABLE */
            503: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    partner_set_active: {
        parameters: {
            query?: never;
            header?: {
                /** @description a unique key for this call (a UUID): a retry with the same key and the same body within 24 hours answers the first call's answer without running it again; the same key with a different body is 409 CONFLICT, and while the first call is still running 409 CONFLICT with Retry-After */
                "Idempotency-Key"?: string;
            };
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description true to activate (runs the negative-auth probe first), false to deactivate (always works) */
                    active: boolean;
                };
            };
        };
        responses: {
            /** @description success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        intent: {
                            archivedAt: string | null;
                            bindingType: string;
                            capabilities: string[];
                            category: string;
                            /** Format: date-time */
                            createdAt: string;
                            description: string;
                            feeRate: number;
                            feeRateUnit: string;
                            /** @description what the continuous re-probe last found */
                            health: {
                                /** @description why the re-probe deactivated the intent; cleared by activating it again */
                                deactivatedReason?: string;
                                lastProbeAt: string | null;
                                /** @description e.g. 'probe PASS, health OK'; empty before the first re-probe */
                                lastProbeResult: string;
                                /** @description re-probes failed in a row (timeouts, 5xx); at the limit the intent is deactivated */
                                probeFailures: number;
                            };
                            id: string;
                            isActive: boolean;
                            isCoreIntent: boolean;
                            name: string;
                            /** @description the result's JSON Schema, as published */
                            outputSchema: {
                                [key: string]: Record<string, never> | unknown[] | string | number | boolean | null;
                            } | null;
                            ownerId: string;
                            /** @description the args' JSON Schema, as published */
                            parametersSchema: {
                                [key: string]: Record<string, never> | unknown[] | string | number | boolean | null;
                            };
                            partnerId: string;
                            payoutAddresses: {
                                [key: string]: string;
                            } | null;
                            /** @description a delegation intent's pricing, as published */
                            pricingShape: {
                                [key: string]: Record<string, never> | unknown[] | string | number | boolean | null;
                            } | null;
                            /** @description the @handle */
                            publicIdentifier: string;
                            sampleQueries: string[];
                            tier: string;
                            timeoutMs: number;
                            toolEndpoint: string;
                            /** Format: date-time */
                            updatedAt: string;
                            verificationStatus: string;
                        };
                        /** @description the probe run for this activation; null when none ran (deactivation, or already active) */
                        probe: {
                            reason: string;
                            steps: {
                                detail: string;
                                latencyMs: number;
                                /**
                                 * @description unsigned: no signature at all; forged_signature: a well-formed signature by a key that is not Switchboard's
                                 * @enum {string}
                                 */
                                request: "unsigned" | "forged_signature";
                                /** @description HTTP status of the answer, when one came */
                                status?: number;
                                /** @enum {string} */
                                verdict: "REJECTED" | "ACCEPTED" | "WRONG_STATUS" | "INCONCLUSIVE" | "BLOCKED";
                            }[];
                            /**
                             * @description PASS: both refused with 401/403; FAIL: a request was accepted or not clearly refused; INCONCLUSIVE: timeout or network error, retry
                             * @enum {string}
                             */
                            verdict: "PASS" | "FAIL" | "INCONCLUSIVE";
                        } | null;
                    };
                };
            };
            /** @description Bad Request: BAD_INPUT */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: UNAUTHENTICATED */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: FORBIDDEN */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not Found: NOT_FOUND */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Conflict: CONFLICT */
            409: {
                headers: {
                    /** @description seconds to wait before retrying, sent when a call with the same Idempotency-Key is still running */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Request Entity Too Large: PAYLOAD_TOO_LARGE */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too Many Requests: RATE_LIMITED */
            429: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal Server Error: INTERNAL */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service Unavailable: UNAVAILABLE */
            503: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    partner_publish_intent_bundle: {
        parameters: {
            query?: never;
            header?: {
                /** @description a unique key for this call (a UUID): a retry with the same key and the same body within 24 hours answers the first call's answer without running it again; the same key with a different body is 409 CONFLICT, and while the first call is still running 409 CONFLICT with Retry-After */
                "Idempotency-Key"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description the intents to publish together, each as for partner_publish_intent */
                    intents: {
                        /**
                         * @description REST (default): Switchboard POSTs the signed envelope; MCP_HTTP: Switchboard calls the MCP tool named exactly as the handle over Streamable HTTP, signature in headers. Immutable
                         * @enum {string}
                         */
                        bindingType?: "REST" | "MCP_HTTP";
                        /** @description what the intent does; MUTATES_USER_FUNDS and REQUIRES_USER_SIGNATURE need a write category. Immutable */
                        capabilities?: ("MUTATES_USER_FUNDS" | "REQUIRES_USER_SIGNATURE" | "READS_CHAIN_DATA" | "CALLS_THIRD_PARTY_API" | "RETURNS_EMBED" | "LONG_RUNNING")[];
                        /**
                         * @description write categories (SWAP SEND BRIDGE EXECUTE STAKE MINT TRANSFER BURN CLAIM) need the caller's confirmation and are never retried; idempotent ones (PRICE BALANCE QUERY ANALYZE OTHER) are retried once on 5xx or network error. Immutable
                         * @enum {string}
                         */
                        category: "SWAP" | "SEND" | "BRIDGE" | "EXECUTE" | "STAKE" | "MINT" | "TRANSFER" | "BURN" | "CLAIM" | "PRICE" | "BALANCE" | "QUERY" | "ANALYZE" | "OTHER";
                        /** @description what it does, for users and for the model that routes to it */
                        description: string;
                        /** @description price: USD per call (usd_per_call, flat_usdc, flat_stablecoin; at most 6 decimals) or basis points on routed value (bps; an integer up to 10000). 0 is valid */
                        feeRate: number;
                        /**
                         * @description unit of feeRate, default usd_per_call; flat_usdc and flat_stablecoin select the flat-fee path (paid on-chain before dispatch; args are only {query}). Immutable
                         * @enum {string}
                         */
                        feeRateUnit?: "usd_per_call" | "bps" | "flat_usdc" | "flat_stablecoin";
                        /** @description display label */
                        name: string;
                        /** @description JSON Schema the result should match; optional. Max 64 KiB, inline only. Immutable */
                        outputSchema?: ({
                            /** @description member name -> the JSON Schema of that member */
                            properties?: {
                                [key: string]: {
                                    [key: string]: Record<string, never> | unknown[] | string | number | boolean | null;
                                };
                            };
                            /** @description members that must be present */
                            required?: string[];
                            /** @description the JSON type(s) allowed */
                            type?: string | string[];
                        } & {
                            [key: string]: Record<string, never> | unknown[] | string | number | boolean | null;
                        }) | null;
                        /** @description JSON Schema of type object for args; default: {query: string} required. Max 64 KiB, inline only. Immutable */
                        parametersSchema?: {
                            /** @description member name -> the JSON Schema of that member */
                            properties?: {
                                [key: string]: {
                                    [key: string]: Record<string, never> | unknown[] | string | number | boolean | null;
                                };
                            };
                            /** @description members that must be present */
                            required?: string[];
                            /** @description the JSON type(s) allowed */
                            type?: string | string[];
                        } & {
                            [key: string]: Record<string, never> | unknown[] | string | number | boolean | null;
                        };
                        /** @description chain key -> receiver address. Keys: evm, svm, or namespace:chain (e.g. evm:8453); EVM values 0x + 40 hex (EIP-55 or lowercase), Solana values base58 of 32 bytes. Required when feeRate > 0 (an evm entry for flat-fee units). Immutable */
                        payoutAddresses?: {
                            [key: string]: string;
                        } | null;
                        /** @description required for tier delegation, must be absent for one_shot. Immutable */
                        pricingShape?: {
                            /** @description whether performance fees use a high-water mark */
                            highWaterMark?: boolean;
                            /** @description lockup period in seconds */
                            lockupSeconds?: number;
                            /** @description yearly management fee in basis points */
                            managementFeeBps?: number;
                            /** @description performance fee in basis points */
                            performanceFeeBps?: number;
                            /** @description redemption terms, e.g. anytime */
                            redemption?: string;
                        } | null;
                        /** @description the @handle callers invoke it by: @ plus 3-32 of a-z 0-9 _ -; unique forever (archived handles stay taken); immutable */
                        publicIdentifier: string;
                        /** @description example requests users might send (up to 10, each up to 200 characters); used in discovery and as test input */
                        sampleQueries?: string[];
                        /**
                         * @description one_shot (default) or delegation. Immutable
                         * @enum {string}
                         */
                        tier?: "one_shot" | "delegation";
                        /** @description per-call timeout in ms, default 30000 */
                        timeoutMs?: number;
                        /** @description HTTPS URL of the endpoint; its host must resolve only to public addresses */
                        toolEndpoint: string;
                    }[];
                };
            };
        };
        responses: {
            /** @description success */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        intents: {
                            archivedAt: string | null;
                            bindingType: string;
                            capabilities: string[];
                            category: string;
                            /** Format: date-time */
                            createdAt: string;
                            description: string;
                            feeRate: number;
                            feeRateUnit: string;
                            /** @description what the continuous re-probe last found */
                            health: {
                                /** @description why the re-probe deactivated the intent; cleared by activating it again */
                                deactivatedReason?: string;
                                lastProbeAt: string | null;
                                /** @description e.g. 'probe PASS, health OK'; empty before the first re-probe */
                                lastProbeResult: string;
                                /** @description re-probes failed in a row (timeouts, 5xx); at the limit the intent is deactivated */
                                probeFailures: number;
                            };
                            id: string;
                            isActive: boolean;
                            isCoreIntent: boolean;
                            name: string;
                            /** @description the result's JSON Schema, as published */
                            outputSchema: {
                                [key: string]: Record<string, never> | unknown[] | string | number | boolean | null;
                            } | null;
                            ownerId: string;
                            /** @description the args' JSON Schema, as published */
                            parametersSchema: {
                                [key: string]: Record<string, never> | unknown[] | string | number | boolean | null;
                            };
                            partnerId: string;
                            payoutAddresses: {
                                [key: string]: string;
                            } | null;
                            /** @description a delegation intent's pricing, as published */
                            pricingShape: {
                                [key: string]: Record<string, never> | unknown[] | string | number | boolean | null;
                            } | null;
                            /** @description the @handle */
                            publicIdentifier: string;
                            sampleQueries: string[];
                            tier: string;
                            timeoutMs: number;
                            toolEndpoint: string;
                            /** Format: date-time */
                            updatedAt: string;
                            verificationStatus: string;
                        }[];
                    };
                };
            };
            /** @description Bad Request: BAD_INPUT */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: UNAUTHENTICATED */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: FORBIDDEN */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Conflict: CONFLICT */
            409: {
                headers: {
                    /** @description seconds to wait before retrying, sent when a call with the same Idempotency-Key is still running */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Request Entity Too Large: PAYLOAD_TOO_LARGE */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too Many Requests: RATE_LIMITED */
            429: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal Server Error: INTERNAL */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service Unavailable: UNAVAILABLE */
            503: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    partner_receipt: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                request_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        receipt: {
                            charges: {
                                gasMicro: number;
                                partnerFeeMicro: number;
                                platformFeeMicro: number;
                                refundedMicro: number;
                                reservedMicro: number;
                                totalMicro: number;
                            };
                            createdAt: string;
                            finishedAt: string;
                            handle: string;
                            intentDefinitionId: string;
                            keyId: string;
                            requestId: string;
                            resultSha256: string;
                            success: boolean;
                            taskId?: string;
                            userId: string;
                        };
                        signature: string;
                    };
                };
            };
            /** @description Bad Request: BAD_INPUT */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: UNAUTHENTICATED */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: FORBIDDEN */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not Found: NOT_FOUND */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too Many Requests: RATE_LIMITED */
            429: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal Server Error: INTERNAL */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service Unavailable: UNAVAILABLE */
            503: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    partner_test_endpoint: {
        parameters: {
            query?: never;
            header?: {
                /** @description a unique key for this call (a UUID): a retry with the same key and the same body within 24 hours answers the first call's answer without running it again; the same key with a different body is 409 CONFLICT, and while the first call is still running 409 CONFLICT with Retry-After */
                "Idempotency-Key"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description args for the signed round trip; default: made from the intent's parametersSchema ({query} for flat-fee intents) */
                    args?: {
                        [key: string]: Record<string, never> | unknown[] | string | number | boolean | null;
                    };
                    /**
                     * @description with toolEndpoint: REST (default) or MCP_HTTP
                     * @enum {string}
                     */
                    bindingType?: "REST" | "MCP_HTTP";
                    /** @description test one of your intents (give this or toolEndpoint) */
                    intentId?: string;
                    /** @description with toolEndpoint and MCP_HTTP: the tool name to call, the @handle you will publish */
                    publicIdentifier?: string;
                    /** @description with toolEndpoint: timeout, default 30000 */
                    timeoutMs?: number;
                    /** @description test a URL before publishing (give this or intentId) */
                    toolEndpoint?: string;
                };
            };
        };
        responses: {
            /** @description success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @description REST endpoints: the full battery (the same as switchboard partner check): round trip, unsigned, another key's signature, a 64-byte signature that does not verify, a stale timestamp, a mismatched Idempotency-Key, a replayed requestId, a wrong content type, a 2 MiB body; each PASS, FAIL or WARN with what to fix */
                        checks: {
                            /** @description what to change when it did not */
                            fix?: string;
                            name: string;
                            /** @description the HTTP status the endpoint answered */
                            status?: number;
                            /** @enum {string} */
                            verdict: "PASS" | "FAIL" | "WARN";
                            /** @description what a correct partner answers */
                            want: string;
                        }[];
                        probe: {
                            reason: string;
                            steps: {
                                detail: string;
                                latencyMs: number;
                                /**
                                 * @description unsigned: no signature at all; forged_signature: a well-formed signature by a key that is not Switchboard's
                                 * @enum {string}
                                 */
                                request: "unsigned" | "forged_signature";
                                /** @description HTTP status of the answer, when one came */
                                status?: number;
                                /** @enum {string} */
                                verdict: "REJECTED" | "ACCEPTED" | "WRONG_STATUS" | "INCONCLUSIVE" | "BLOCKED";
                            }[];
                            /**
                             * @description PASS: both refused with 401/403; FAIL: a request was accepted or not clearly refused; INCONCLUSIVE: timeout or network error, retry
                             * @enum {string}
                             */
                            verdict: "PASS" | "FAIL" | "INCONCLUSIVE";
                        };
                        /** @description the probe passed: partner_set_active would activate */
                        readyToActivate: boolean;
                        roundTrip: {
                            args: {
                                [key: string]: Record<string, never> | unknown[] | string | number | boolean | null;
                            };
                            /** @enum {string} */
                            argsSource: "given" | "sample" | "flat_fee_query" | "empty";
                            /** @description why no answer came */
                            error?: string;
                            latencyMs: number;
                            notes: string[];
                            /** @description why the answer is not a response envelope */
                            parseError?: string;
                            requestId: string;
                            /** @description the parsed response envelope */
                            response: {
                                /** @description the failure (success false) */
                                error?: {
                                    code: string;
                                    message: string;
                                };
                                /** @description the network gas the call's on-chain step actually cost, in micro-USD (write categories); omitted: settled at the estimate */
                                gasCostMicro?: number;
                                /** @description the partner's cost in micro-USD; 0 when omitted */
                                providerCostMicro: number;
                                /** @description the partner's free-form JSON result (success true) */
                                result?: Record<string, never> | unknown[] | string | number | boolean | null;
                                success: boolean;
                            } | null;
                            /** @description HTTP status (MCP_HTTP: of the tools/call request) */
                            status?: number;
                            /**
                             * @description OK: 2xx with success true; PARTNER_FAILURE: a valid failure envelope; BAD_RESPONSE: the answer is not a valid response envelope; NO_ANSWER: timeout or network error; BLOCKED: the address is not allowed
                             * @enum {string}
                             */
                            verdict: "OK" | "PARTNER_FAILURE" | "BAD_RESPONSE" | "NO_ANSWER" | "BLOCKED";
                        };
                        summary: string;
                        target: {
                            bindingType: string;
                            /** @description as sent in the envelope; test for a URL that is not published yet */
                            intentDefinitionId: string;
                            intentId?: string;
                            timeoutMs: number;
                            toolEndpoint: string;
                            /** @description MCP_HTTP: the tool called */
                            toolName?: string;
                        };
                    };
                };
            };
            /** @description Bad Request: BAD_INPUT */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: UNAUTHENTICATED */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: FORBIDDEN */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not Found: NOT_FOUND */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Conflict: CONFLICT */
            409: {
                headers: {
                    /** @description seconds to wait before retrying, sent when a call with the same Idempotency-Key is still running */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Request Entity Too Large: PAYLOAD_TOO_LARGE */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too Many Requests: RATE_LIMITED */
            429: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal Server Error: INTERNAL */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service Unavailable: UNAVAILABLE */
            503: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    policy_get: {
        parameters: {
            query?: {
                keyId?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @description the account's policy (null: none), set on the portal or by the operator */
                        account: {
                            /** @description with denyByDefault: only these are allowed */
                            allow?: {
                                /** @description categories, e.g. QUERY, SWAP, SEND, X402 */
                                categories?: string[];
                                /** @description contracts a partner-proposed transaction calls (its to), by address */
                                contracts?: string[];
                                /** @description @handles */
                                handles?: string[];
                                /** @description x402 resources by host name, e.g. api.example.com (x402_fetch) */
                                hosts?: string[];
                                /** @description publishers, by partnerId */
                                publishers?: string[];
                                /** @description addresses money is sent or paid to (wallet sends, x402 payments' payTo); EVM addresses match whatever their case */
                                recipients?: string[];
                            };
                            /** @description calls a human approves first, in the portal */
                            approval?: {
                                /** @description calls whose worst case is above this many USD */
                                aboveUsd?: string;
                                /** @description calls of these categories */
                                categories?: string[];
                                /** @description the account's first call of each @handle */
                                firstCallToPartner?: boolean;
                            };
                            /** @description spend caps per rolling window: at most one per window */
                            caps?: {
                                /** @description the most the window's calls may cost, in USD (more than 0) */
                                usd: string;
                                /**
                                 * @description the rolling window: the last hour, day (24 h) or 30 days
                                 * @enum {string}
                                 */
                                window: "hour" | "day" | "30d";
                            }[];
                            /** @description never allowed, whatever else says */
                            deny?: {
                                categories?: string[];
                                contracts?: string[];
                                handles?: string[];
                                hosts?: string[];
                                publishers?: string[];
                                recipients?: string[];
                            };
                            /** @description only what allow names may be called */
                            denyByDefault?: boolean;
                            /** @description the most one call may cost, in USD (its worst case: fees, gas, or a flat fee) */
                            perCallMaxUsd?: string;
                        } | null;
                        /** @description the allow list of each governing policy that denies by default, in the order of governing: a call must be named (by its @handle, its publisher or its category) in every one */
                        allowOnly: {
                            allow: {
                                categories?: string[];
                                contracts?: string[];
                                handles?: string[];
                                hosts?: string[];
                                publishers?: string[];
                                recipients?: string[];
                            };
                            /** @description whose policy: account, or key <id> */
                            policy: string;
                        }[];
                        /** @description every policy that governs the key's calls, combined: the lowest caps and per-call maximum, every deny, every approval rule, and denyByDefault when any says so; its allow is always empty, as allow lists do not combine into one: see allowOnly */
                        effective: {
                            allow?: {
                                categories?: string[];
                                contracts?: string[];
                                handles?: string[];
                                hosts?: string[];
                                publishers?: string[];
                                recipients?: string[];
                            };
                            approval?: {
                                aboveUsd?: string;
                                categories?: string[];
                                firstCallToPartner?: boolean;
                            };
                            caps?: {
                                usd: string;
                                /** @enum {string} */
                                window: "hour" | "day" | "30d";
                            }[];
                            deny?: {
                                categories?: string[];
                                contracts?: string[];
                                handles?: string[];
                                hosts?: string[];
                                publishers?: string[];
                                recipients?: string[];
                            };
                            denyByDefault?: boolean;
                            perCallMaxUsd?: string;
                        };
                        /** @description whose policies govern the calls: account, then keys from the root down */
                        governing: string[];
                        /** @description the key's own policy (null: none, or the portal's view of the account) */
                        key: {
                            allow?: {
                                categories?: string[];
                                contracts?: string[];
                                handles?: string[];
                                hosts?: string[];
                                publishers?: string[];
                                recipients?: string[];
                            };
                            approval?: {
                                aboveUsd?: string;
                                categories?: string[];
                                firstCallToPartner?: boolean;
                            };
                            caps?: {
                                usd: string;
                                /** @enum {string} */
                                window: "hour" | "day" | "30d";
                            }[];
                            deny?: {
                                categories?: string[];
                                contracts?: string[];
                                handles?: string[];
                                hosts?: string[];
                                publishers?: string[];
                                recipients?: string[];
                            };
                            denyByDefault?: boolean;
                            perCallMaxUsd?: string;
                        } | null;
                        keyId?: string;
                        windows: {
                            /** @description what credit calls cost in the window (fees, and flat fees paid on chain) */
                            creditUsd: string;
                            /** @description what the tightest cap on it leaves (absent when no policy caps the window) */
                            leftUsd?: string;
                            /** @description what the embedded wallets paid or sent on chain in the window (x402 payments, sends, proposed transactions) at their USD value when judged; top-ups are not spending */
                            onchainUsd: string;
                            /** @description what the calls and on-chain movements it covers spent in the window (creditUsd + onchainUsd), calls in flight at the most they can cost */
                            spentUsd: string;
                            /** @description hour, day or 30d */
                            window: string;
                        }[];
                    };
                };
            };
            /** @description Bad Request: BAD_INPUT */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: UNAUTHENTICATED */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: FORBIDDEN */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not Found: NOT_FOUND */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too Many Requests: RATE_LIMITED */
            429: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal Server Error: INTERNAL */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service Unavailable: UNAVAILABLE */
            503: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    policy_set: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description a key you act on (yours, or one minted under it); default: the calling key (on the portal: the account) */
                    keyId?: string;
                    /** @description the whole new policy; null removes it. A key may only narrow (never loosen) its own policy and its descendants' */
                    policy: {
                        /** @description with denyByDefault: only these are allowed */
                        allow?: {
                            /** @description categories, e.g. QUERY, SWAP, SEND, X402 */
                            categories?: string[];
                            /** @description contracts a partner-proposed transaction calls (its to), by address */
                            contracts?: string[];
                            /** @description @handles */
                            handles?: string[];
                            /** @description x402 resources by host name, e.g. api.example.com (x402_fetch) */
                            hosts?: string[];
                            /** @description publishers, by partnerId */
                            publishers?: string[];
                            /** @description addresses money is sent or paid to (wallet sends, x402 payments' payTo); EVM addresses match whatever their case */
                            recipients?: string[];
                        };
                        /** @description calls a human approves first, in the portal */
                        approval?: {
                            /** @description calls whose worst case is above this many USD */
                            aboveUsd?: string;
                            /** @description calls of these categories */
                            categories?: string[];
                            /** @description the account's first call of each @handle */
                            firstCallToPartner?: boolean;
                        };
                        /** @description spend caps per rolling window: at most one per window */
                        caps?: {
                            /** @description the most the window's calls may cost, in USD (more than 0) */
                            usd: string;
                            /**
                             * @description the rolling window: the last hour, day (24 h) or 30 days
                             * @enum {string}
                             */
                            window: "hour" | "day" | "30d";
                        }[];
                        /** @description never allowed, whatever else says */
                        deny?: {
                            /** @description categories, e.g. QUERY, SWAP, SEND, X402 */
                            categories?: string[];
                            /** @description contracts a partner-proposed transaction calls (its to), by address */
                            contracts?: string[];
                            /** @description @handles */
                            handles?: string[];
                            /** @description x402 resources by host name, e.g. api.example.com (x402_fetch) */
                            hosts?: string[];
                            /** @description publishers, by partnerId */
                            publishers?: string[];
                            /** @description addresses money is sent or paid to (wallet sends, x402 payments' payTo); EVM addresses match whatever their case */
                            recipients?: string[];
                        };
                        /** @description only what allow names may be called */
                        denyByDefault?: boolean;
                        /** @description the most one call may cost, in USD (its worst case: fees, gas, or a flat fee) */
                        perCallMaxUsd?: string;
                    } | null;
                };
            };
        };
        responses: {
            /** @description success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @description the account's policy (null: none), set on the portal or by the operator */
                        account: {
                            /** @description with denyByDefault: only these are allowed */
                            allow?: {
                                /** @description categories, e.g. QUERY, SWAP, SEND, X402 */
                                categories?: string[];
                                /** @description contracts a partner-proposed transaction calls (its to), by address */
                                contracts?: string[];
                                /** @description @handles */
                                handles?: string[];
                                /** @description x402 resources by host name, e.g. api.example.com (x402_fetch) */
                                hosts?: string[];
                                /** @description publishers, by partnerId */
                                publishers?: string[];
                                /** @description addresses money is sent or paid to (wallet sends, x402 payments' payTo); EVM addresses match whatever their case */
                                recipients?: string[];
                            };
                            /** @description calls a human approves first, in the portal */
                            approval?: {
                                /** @description calls whose worst case is above this many USD */
                                aboveUsd?: string;
                                /** @description calls of these categories */
                                categories?: string[];
                                /** @description the account's first call of each @handle */
                                firstCallToPartner?: boolean;
                            };
                            /** @description spend caps per rolling window: at most one per window */
                            caps?: {
                                /** @description the most the window's calls may cost, in USD (more than 0) */
                                usd: string;
                                /**
                                 * @description the rolling window: the last hour, day (24 h) or 30 days
                                 * @enum {string}
                                 */
                                window: "hour" | "day" | "30d";
                            }[];
                            /** @description never allowed, whatever else says */
                            deny?: {
                                categories?: string[];
                                contracts?: string[];
                                handles?: string[];
                                hosts?: string[];
                                publishers?: string[];
                                recipients?: string[];
                            };
                            /** @description only what allow names may be called */
                            denyByDefault?: boolean;
                            /** @description the most one call may cost, in USD (its worst case: fees, gas, or a flat fee) */
                            perCallMaxUsd?: string;
                        } | null;
                        /** @description the allow list of each governing policy that denies by default, in the order of governing: a call must be named (by its @handle, its publisher or its category) in every one */
                        allowOnly: {
                            allow: {
                                categories?: string[];
                                contracts?: string[];
                                handles?: string[];
                                hosts?: string[];
                                publishers?: string[];
                                recipients?: string[];
                            };
                            /** @description whose policy: account, or key <id> */
                            policy: string;
                        }[];
                        /** @description every policy that governs the key's calls, combined: the lowest caps and per-call maximum, every deny, every approval rule, and denyByDefault when any says so; its allow is always empty, as allow lists do not combine into one: see allowOnly */
                        effective: {
                            allow?: {
                                categories?: string[];
                                contracts?: string[];
                                handles?: string[];
                                hosts?: string[];
                                publishers?: string[];
                                recipients?: string[];
                            };
                            approval?: {
                                aboveUsd?: string;
                                categories?: string[];
                                firstCallToPartner?: boolean;
                            };
                            caps?: {
                                usd: string;
                                /** @enum {string} */
                                window: "hour" | "day" | "30d";
                            }[];
                            deny?: {
                                categories?: string[];
                                contracts?: string[];
                                handles?: string[];
                                hosts?: string[];
                                publishers?: string[];
                                recipients?: string[];
                            };
                            denyByDefault?: boolean;
                            perCallMaxUsd?: string;
                        };
                        /** @description whose policies govern the calls: account, then keys from the root down */
                        governing: string[];
                        /** @description the key's own policy (null: none, or the portal's view of the account) */
                        key: {
                            allow?: {
                                categories?: string[];
                                contracts?: string[];
                                handles?: string[];
                                hosts?: string[];
                                publishers?: string[];
                                recipients?: string[];
                            };
                            approval?: {
                                aboveUsd?: string;
                                categories?: string[];
                                firstCallToPartner?: boolean;
                            };
                            caps?: {
                                usd: string;
                                /** @enum {string} */
                                window: "hour" | "day" | "30d";
                            }[];
                            deny?: {
                                categories?: string[];
                                contracts?: string[];
                                handles?: string[];
                                hosts?: string[];
                                publishers?: string[];
                                recipients?: string[];
                            };
                            denyByDefault?: boolean;
                            perCallMaxUsd?: string;
                        } | null;
                        keyId?: string;
                        windows: {
                            /** @description what credit calls cost in the window (fees, and flat fees paid on chain) */
                            creditUsd: string;
                            /** @description what the tightest cap on it leaves (absent when no policy caps the window) */
                            leftUsd?: string;
                            /** @description what the embedded wallets paid or sent on chain in the window (x402 payments, sends, proposed transactions) at their USD value when judged; top-ups are not spending */
                            onchainUsd: string;
                            /** @description what the calls and on-chain movements it covers spent in the window (creditUsd + onchainUsd), calls in flight at the most they can cost */
                            spentUsd: string;
                            /** @description hour, day or 30d */
                            window: string;
                        }[];
                    };
                };
            };
            /** @description Bad Request: BAD_INPUT */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: UNAUTHENTICATED */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: FORBIDDEN */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not Found: NOT_FOUND */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too Many Requests: RATE_LIMITED */
            429: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal Server Error: INTERNAL */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service Unavailable: UNAVAILABLE */
            503: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    task_get: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                task_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Format: date-time */
                        createdAt: string;
                        /** @description when completed with an error: the error model object the call would have answered */
                        error?: {
                            code: string;
                            details?: {
                                [key: string]: Record<string, never> | unknown[] | string | number | boolean | null;
                            };
                            message: string;
                        };
                        /** Format: date-time */
                        lastUpdatedAt: string;
                        pollIntervalMs: number;
                        /** @description the call the task runs (its invocation) */
                        requestId: string;
                        /** @description when completed with an answer: the tool's answer, as the call would have given it */
                        result?: Record<string, never> | unknown[] | string | number | boolean | null;
                        /** @enum {string} */
                        status: "working" | "completed" | "failed" | "cancelled";
                        statusMessage?: string;
                        taskId: string;
                        ttlMs: number;
                    };
                };
            };
            /** @description Bad Request: BAD_INPUT */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: UNAUTHENTICATED */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: FORBIDDEN */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not Found: NOT_FOUND */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too Many Requests: RATE_LIMITED */
            429: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal Server Error: INTERNAL */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service Unavailable: UNAVAILABLE */
            503: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    task_cancel: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                task_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Format: date-time */
                        createdAt: string;
                        /** @description when completed with an error: the error model object the call would have answered */
                        error?: {
                            code: string;
                            details?: {
                                [key: string]: Record<string, never> | unknown[] | string | number | boolean | null;
                            };
                            message: string;
                        };
                        /** Format: date-time */
                        lastUpdatedAt: string;
                        pollIntervalMs: number;
                        /** @description the call the task runs (its invocation) */
                        requestId: string;
                        /** @description when completed with an answer: the tool's answer, as the call would have given it */
                        result?: Record<string, never> | unknown[] | string | number | boolean | null;
                        /** @enum {string} */
                        status: "working" | "completed" | "failed" | "cancelled";
                        statusMessage?: string;
                        taskId: string;
                        ttlMs: number;
                    };
                };
            };
            /** @description Bad Request: BAD_INPUT */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: UNAUTHENTICATED */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: FORBIDDEN */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not Found: NOT_FOUND */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too Many Requests: RATE_LIMITED */
            429: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal Server Error: INTERNAL */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service Unavailable: UNAVAILABLE */
            503: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    get_price: {
        parameters: {
            query: {
                chain?: string;
                query: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /**
                         * Format: date-time
                         * @description when the price was fetched from the provider, ISO 8601 UTC
                         */
                        fetchedAt: string;
                        /** @description USD price as an exact decimal string */
                        priceUsd: string;
                        /**
                         * @description price provider used
                         * @enum {string}
                         */
                        source: "coingecko" | "defillama" | "jupiter";
                        /** @enum {string} */
                        status: "OK";
                        ticker: string;
                        /** @description the token priced (the most trusted match of the query) */
                        token: {
                            /** @description contract address (EVM, EIP-55 checksummed) or mint (Solana). Native coins use 0xEeeeeEeeeEeEeeEeEeEeeEEEeeeeEeeeeeeeEEeE on EVM chains and the wrapped-SOL mint So11111111111111111111111111111111111111112 on Solana */
                            address: string;
                            /** @enum {string} */
                            chain: "ethereum" | "arbitrum" | "base" | "polygon" | "optimism" | "avalanche" | "bsc" | "solana";
                            /** @description EVM chain id; 101 for Solana mainnet */
                            chainId: number;
                            decimals: number;
                            /** @description true for a token on no trusted list that looks like spam (URL or claim/airdrop bait in its name, a look-alike of a major ticker, or flagged by a provider). Never swap, bridge or send it */
                            isSpam: boolean;
                            /** @description CoinGecko id of the token; empty when the market-data provider does not list it */
                            marketDataId: string;
                            name: string;
                            /** @description why isSpam is true */
                            spamReason?: string;
                            /** @description symbol, e.g. USDC */
                            ticker: string;
                        };
                    };
                };
            };
            /** @description Bad Request: BAD_INPUT */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: UNAUTHENTICATED */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: FORBIDDEN */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not Found: NOT_FOUND */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too Many Requests: RATE_LIMITED */
            429: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal Server Error: INTERNAL */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Bad Gateway: UPSTREAM */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service Unavailable: UNAVAILABLE */
            503: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    resolve_token: {
        parameters: {
            query: {
                chain?: string;
                query: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @enum {string} */
                        status: "OK";
                        /** @description matches, most trusted first; empty when nothing matches */
                        tokens: {
                            /** @description contract address (EVM, EIP-55 checksummed) or mint (Solana). Native coins use 0xEeeeeEeeeEeEeeEeEeEeeEEEeeeeEeeeeeeeEEeE on EVM chains and the wrapped-SOL mint So11111111111111111111111111111111111111112 on Solana */
                            address: string;
                            /** @enum {string} */
                            chain: "ethereum" | "arbitrum" | "base" | "polygon" | "optimism" | "avalanche" | "bsc" | "solana";
                            /** @description EVM chain id; 101 for Solana mainnet */
                            chainId: number;
                            decimals: number;
                            /** @description true for a token on no trusted list that looks like spam (URL or claim/airdrop bait in its name, a look-alike of a major ticker, or flagged by a provider). Never swap, bridge or send it */
                            isSpam: boolean;
                            /** @description CoinGecko id of the token; empty when the market-data provider does not list it */
                            marketDataId: string;
                            name: string;
                            /** @description why isSpam is true */
                            spamReason?: string;
                            /** @description symbol, e.g. USDC */
                            ticker: string;
                        }[];
                    };
                };
            };
            /** @description Bad Request: BAD_INPUT */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: UNAUTHENTICATED */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: FORBIDDEN */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too Many Requests: RATE_LIMITED */
            429: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal Server Error: INTERNAL */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Bad Gateway: UPSTREAM */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service Unavailable: UNAVAILABLE */
            503: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    usage_list: {
        parameters: {
            query?: {
                cursor?: string;
                kind?: "call" | "topup" | "x402" | "send" | "proposed";
                limit?: number;
                outcome?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        next: string;
                        rows: {
                            chargeMicro: number;
                            /** Format: date-time */
                            createdAt: string;
                            handle: string;
                            httpStatus: number | null;
                            intentId: string;
                            keyId: string;
                            /**
                             * @description what moved money: call (a partner call), topup (credit bought), x402 (an x402 resource paid from the embedded wallet), send (a wallet send), proposed (a partner-proposed transaction)
                             * @enum {string}
                             */
                            kind: "call" | "topup" | "x402" | "send" | "proposed";
                            latencyMs: number | null;
                            /** @description the CAIP-2 chain id of an on-chain movement (e.g. eip155:8453); null for a call */
                            network: string | null;
                            outcome: string;
                            outcomeCode: string;
                            requestId: string;
                            /** @description the on-chain movement's transaction; null for a call, or while none is sent yet */
                            txHash: string | null;
                            /** @description the movement's USD value when it was judged (a top-up: the credit it bought); null for a call, whose cost is chargeMicro */
                            valueUsd: number | null;
                        }[];
                    };
                };
            };
            /** @description Bad Request: BAD_INPUT */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: UNAUTHENTICATED */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: FORBIDDEN */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too Many Requests: RATE_LIMITED */
            429: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal Server Error: INTERNAL */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service Unavailable: UNAVAILABLE */
            503: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    wallet_send: {
        parameters: {
            query?: never;
            header?: {
                /** @description a unique key for this call (a UUID): a retry with the same key and the same body within 24 hours answers the first call's answer without running it again; the same key with a different body is 409 CONFLICT, and while the first call is still running 409 CONFLICT with Retry-After */
                "Idempotency-Key"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description how much to send, as an exact decimal string in the token's units ("5" USDC, "0.01" ETH), with at most the token's decimals */
                    amount: string;
                    /** @description a balances chain: ethereum, arbitrum, base, polygon, optimism, avalanche, bsc or solana (those this deployment has a node for) */
                    chain: string;
                    /**
                     * Format: uuid
                     * @description the requestId of the CONFIRMATION_REQUIRED answer (or of an APPROVAL_REQUIRED one the owner approved), sent with the same chain, token, to and amount once the user approved it: the send is signed and broadcast
                     */
                    confirmRequestId?: string;
                    /** @description with confirmRequestId: the user declined the quote; it is closed and nothing is signed */
                    decline?: boolean;
                    /** @description the recipient: a 0x address on EVM chains, a base58 address on Solana */
                    to: string;
                    /** @description a ticker (USDC, ETH, SOL), or the token's contract address (EVM) or mint (Solana); resolved as resolve_token does, and a token flagged as spam is refused */
                    token: string;
                };
            };
        };
        responses: {
            /** @description success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @description the amount sent, in the token's units, as a decimal string */
                        amount: string;
                        chain: string;
                        /** @description the transaction on the chain's block explorer */
                        explorerUrl?: string;
                        /** @description the send's record (usage shows it); a retry of the confirmation with it never sends twice */
                        requestId: string;
                        /**
                         * @description submitted: signed, recorded and broadcast, not yet confirmed (the send's record and the wallet.sent or wallet.failed webhook tell its end); confirmed: on chain
                         * @enum {string}
                         */
                        status: "submitted" | "confirmed";
                        to: string;
                        /** @description what moved: the token's contract address or mint, or the native coin's ticker (ETH, SOL, ...) */
                        token: string;
                        /** @description the transaction hash (EVM) or signature (Solana) */
                        txHash: string;
                        /** @description its USD value when it was judged; null when the token has no price */
                        valueUsd: number | null;
                    };
                };
            };
            /** @description Bad Request: BAD_INPUT */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: UNAUTHENTICATED */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: FORBIDDEN, POLICY_DENIED */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not Found: NOT_FOUND */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Conflict: CONFLICT, CONFIRMATION_REQUIRED, APPROVAL_REQUIRED, APPROVAL_PENDING */
            409: {
                headers: {
                    /** @description seconds to wait before retrying, sent when a call with the same Idempotency-Key is still running */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Request Entity Too Large: PAYLOAD_TOO_LARGE */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too Many Requests: RATE_LIMITED */
            429: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal Server Error: INTERNAL */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Bad Gateway: UPSTREAM */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service Unavailable: UNAVAILABLE */
            503: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    connected_wallet_list: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @description how many wallets an account may connect */
                        max: number;
                        wallets: {
                            address: string;
                            /** Format: date-time */
                            createdAt: string;
                            /**
                             * @description evm (the 7 EVM chains) or svm (Solana)
                             * @enum {string}
                             */
                            family: "evm" | "svm";
                            label: string;
                        }[];
                    };
                };
            };
            /** @description Bad Request: BAD_INPUT */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: UNAUTHENTICATED */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: FORBIDDEN */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too Many Requests: RATE_LIMITED */
            429: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal Server Error: INTERNAL */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service Unavailable: UNAVAILABLE */
            503: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    connected_wallet_add: {
        parameters: {
            query?: never;
            header?: {
                /** @description a unique key for this call (a UUID): a retry with the same key and the same body within 24 hours answers the first call's answer without running it again; the same key with a different body is 409 CONFLICT, and while the first call is still running 409 CONFLICT with Retry-After */
                "Idempotency-Key"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description EVM address (0x...) or Solana address (base58) */
                    address: string;
                    /** @description optional name for the wallet */
                    label?: string;
                };
            };
        };
        responses: {
            /** @description success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @description false when the address was already connected */
                        added: boolean;
                        wallet: {
                            address: string;
                            /** Format: date-time */
                            createdAt: string;
                            /**
                             * @description evm (the 7 EVM chains) or svm (Solana)
                             * @enum {string}
                             */
                            family: "evm" | "svm";
                            label: string;
                        };
                    };
                };
            };
            /** @description Bad Request: BAD_INPUT */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: UNAUTHENTICATED */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: FORBIDDEN */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Conflict: CONFLICT */
            409: {
                headers: {
                    /** @description seconds to wait before retrying, sent when a call with the same Idempotency-Key is still running */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Request Entity Too Large: PAYLOAD_TOO_LARGE */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too Many Requests: RATE_LIMITED */
            429: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal Server Error: INTERNAL */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service Unavailable: UNAVAILABLE */
            503: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    connected_wallet_remove: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                address: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        removed: {
                            address: string;
                            /** Format: date-time */
                            createdAt: string;
                            /**
                             * @description evm (the 7 EVM chains) or svm (Solana)
                             * @enum {string}
                             */
                            family: "evm" | "svm";
                            label: string;
                        };
                    };
                };
            };
            /** @description Bad Request: BAD_INPUT */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: UNAUTHENTICATED */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: FORBIDDEN */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not Found: NOT_FOUND */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too Many Requests: RATE_LIMITED */
            429: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal Server Error: INTERNAL */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service Unavailable: UNAVAILABLE */
            503: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    webhook_delivery_list: {
        parameters: {
            query?: {
                before?: string;
                beforeId?: string;
                endpointId?: string;
                limit?: number;
                state?: "pending" | "delivered" | "failed";
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        deliveries: {
                            attempts: {
                                /** Format: date-time */
                                at: string;
                                durationMs: number;
                                error?: string;
                                /** @description the receiver's HTTP status; 0 when none came back */
                                status: number;
                            }[];
                            /** Format: date-time */
                            createdAt: string;
                            /** Format: date-time */
                            deliveredAt?: string;
                            endpointId: string;
                            eventType: string;
                            /** @description delivery id, for webhook_delivery_replay */
                            id: string;
                            /** Format: date-time */
                            nextAttemptAt?: string;
                            /** @enum {string} */
                            state: "pending" | "delivered" | "failed";
                            url: string;
                            /** @description the webhook-id header: the same on every attempt and replay */
                            webhookId: string;
                        }[];
                        /**
                         * Format: date-time
                         * @description pass as before for the next page, with nextBeforeId; absent on the last
                         */
                        nextBefore?: string;
                        /** @description pass as beforeId for the next page, with nextBefore */
                        nextBeforeId?: string;
                    };
                };
            };
            /** @description Bad Request: BAD_INPUT */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: UNAUTHENTICATED */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: FORBIDDEN */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too Many Requests: RATE_LIMITED */
            429: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal Server Error: INTERNAL */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service Unavailable: UNAVAILABLE */
            503: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    webhook_delivery_replay: {
        parameters: {
            query?: never;
            header?: {
                /** @description a unique key for this call (a UUID): a retry with the same key and the same body within 24 hours answers the first call's answer without running it again; the same key with a different body is 409 CONFLICT, and while the first call is still running 409 CONFLICT with Retry-After */
                "Idempotency-Key"?: string;
            };
            path: {
                delivery_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": Record<string, never>;
            };
        };
        responses: {
            /** @description success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        delivery: {
                            attempts: {
                                /** Format: date-time */
                                at: string;
                                durationMs: number;
                                error?: string;
                                /** @description the receiver's HTTP status; 0 when none came back */
                                status: number;
                            }[];
                            /** Format: date-time */
                            createdAt: string;
                            /** Format: date-time */
                            deliveredAt?: string;
                            endpointId: string;
                            eventType: string;
                            /** @description delivery id, for webhook_delivery_replay */
                            id: string;
                            /** Format: date-time */
                            nextAttemptAt?: string;
                            /** @enum {string} */
                            state: "pending" | "delivered" | "failed";
                            url: string;
                            /** @description the webhook-id header: the same on every attempt and replay */
                            webhookId: string;
                        };
                        notice?: string;
                    };
                };
            };
            /** @description Bad Request: BAD_INPUT */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: UNAUTHENTICATED */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: FORBIDDEN */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not Found: NOT_FOUND */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Conflict: CONFLICT */
            409: {
                headers: {
                    /** @description seconds to wait before retrying, sent when a call with the same Idempotency-Key is still running */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Request Entity Too Large: PAYLOAD_TOO_LARGE */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too Many Requests: RATE_LIMITED */
            429: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal Server Error: INTERNAL */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service Unavailable: UNAVAILABLE */
            503: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    webhook_endpoint_list: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        endpoints: {
                            /** Format: date-time */
                            createdAt: string;
                            description?: string;
                            /**
                             * Format: date-time
                             * @description when it was disabled (failing for days, or it answered 410 Gone); webhook_delivery_replay of one of its deliveries enables it again
                             */
                            disabledAt?: string;
                            disabledReason?: string;
                            /** @description the event types it receives; empty is every type */
                            eventTypes: string[];
                            /**
                             * Format: date-time
                             * @description when its current run of failed attempts began; absent when its last attempt succeeded
                             */
                            failingSince?: string;
                            /** @description endpoint id, for webhook_endpoint_delete and webhook_delivery_list */
                            id: string;
                            url: string;
                        }[];
                        /** @description the service's Ed25519 key (whpk_...) that verifies every v1a signature */
                        publicKey: string;
                    };
                };
            };
            /** @description Bad Request: BAD_INPUT */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: UNAUTHENTICATED */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: FORBIDDEN */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too Many Requests: RATE_LIMITED */
            429: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal Server Error: INTERNAL */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service Unavailable: UNAVAILABLE */
            503: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    webhook_endpoint_create: {
        parameters: {
            query?: never;
            header?: {
                /** @description a unique key for this call (a UUID): a retry with the same key and the same body within 24 hours answers the first call's answer without running it again; the same key with a different body is 409 CONFLICT, and while the first call is still running 409 CONFLICT with Retry-After */
                "Idempotency-Key"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    description?: string;
                    /** @description event types to receive (call.succeeded, call.failed, call.refunded, approval.requested, approval.decided, policy.denied, intent.activated, intent.deactivated, payout.settled, key.created, key.revoked, wallet.exported, credit.topped_up, x402.paid, x402.failed); omit for every type */
                    eventTypes?: string[];
                    /** @description https URL the events are POSTed to */
                    url: string;
                };
            };
        };
        responses: {
            /** @description success */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        endpoint: {
                            /** Format: date-time */
                            createdAt: string;
                            description?: string;
                            /**
                             * Format: date-time
                             * @description when it was disabled (failing for days, or it answered 410 Gone); webhook_delivery_replay of one of its deliveries enables it again
                             */
                            disabledAt?: string;
                            disabledReason?: string;
                            /** @description the event types it receives; empty is every type */
                            eventTypes: string[];
                            /**
                             * Format: date-time
                             * @description when its current run of failed attempts began; absent when its last attempt succeeded
                             */
                            failingSince?: string;
                            /** @description endpoint id, for webhook_endpoint_delete and webhook_delivery_list */
                            id: string;
                            url: string;
                        };
                        /** @description the service's Ed25519 key (whpk_...) for the v1a signature, also at /.well-known/service-public-key */
                        publicKey: string;
                        /** @description the endpoint's HMAC secret (whsec_...) for the v1 signature; shown only now, store it */
                        secret: string;
                    };
                };
            };
            /** @description Bad Request: BAD_INPUT */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: UNAUTHENTICATED */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: FORBIDDEN */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Conflict: CONFLICT */
            409: {
                headers: {
                    /** @description seconds to wait before retrying, sent when a call with the same Idempotency-Key is still running */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Request Entity Too Large: PAYLOAD_TOO_LARGE */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too Many Requests: RATE_LIMITED */
            429: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal Server Error: INTERNAL */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service Unavailable: UNAVAILABLE */
            503: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    webhook_endpoint_delete: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                endpoint_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        deleted: string;
                    };
                };
            };
            /** @description Bad Request: BAD_INPUT */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: UNAUTHENTICATED */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: FORBIDDEN */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not Found: NOT_FOUND */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too Many Requests: RATE_LIMITED */
            429: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal Server Error: INTERNAL */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service Unavailable: UNAVAILABLE */
            503: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    x402_fetch: {
        parameters: {
            query?: never;
            header?: {
                /** @description a unique key for this call (a UUID): a retry with the same key and the same body within 24 hours answers the first call's answer without running it again; the same key with a different body is 409 CONFLICT, and while the first call is still running 409 CONFLICT with Retry-After */
                "Idempotency-Key"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description the request body, as text */
                    body?: string;
                    /**
                     * Format: uuid
                     * @description the requestId of an APPROVAL_REQUIRED answer, once the owner approved it: the same request is paid
                     */
                    confirmRequestId?: string;
                    /** @description request headers to send: at most 32, names HTTP tokens, values at most 4096 characters; not Host, Content-Length, Cookie, Authorization, hop-by-hop headers, or x402's own */
                    headers?: {
                        [key: string]: string;
                    };
                    /** @description the most to pay for this request, in USD (default 1); a higher price is refused with nothing signed */
                    maxUsd?: number;
                    /** @description call this tool of the MCP server at url (Streamable HTTP) instead of requesting the URL: a payment the tool asks for (x402's MCP transport) is judged and paid the same way, and the tool's result is the answer's body (JSON) */
                    mcpTool?: {
                        /** @description the tool's arguments */
                        arguments?: {
                            [key: string]: Record<string, never> | unknown[] | string | number | boolean | null;
                        };
                        /** @description the tool's name on that server */
                        name: string;
                    };
                    /**
                     * @description default GET
                     * @enum {string}
                     */
                    method?: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
                    /** @description the resource: an https URL (the partner SSRF guard applies: public addresses only) */
                    url: string;
                };
            };
        };
        responses: {
            /** @description success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @description the answer's body, cut at 1 MiB: text, or base64 when it is not UTF-8 (bodyEncoding) */
                        body: string;
                        /** @enum {string} */
                        bodyEncoding: "text" | "base64";
                        headers: {
                            [key: string]: string;
                        };
                        /** @description what was paid (0: the resource asked for nothing) */
                        paidUsd: number;
                        /** @description absent when nothing was paid */
                        payment?: {
                            /** @description CAIP-2 chain id the payment was made on */
                            network: string;
                            /** @description the embedded wallet that signed */
                            payer: string;
                            /** @description the seller's address */
                            payTo: string;
                            /** @description the seller's settlement transaction (its PAYMENT-RESPONSE) */
                            txHash?: string;
                        };
                        /** @description the payment's record (usage shows it) */
                        requestId?: string;
                        /** @description the resource's HTTP status */
                        status: number;
                        /** @description the body was longer than 1 MiB and is cut */
                        truncated?: boolean;
                    };
                };
            };
            /** @description Bad Request: BAD_INPUT */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: UNAUTHENTICATED */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: FORBIDDEN, POLICY_DENIED */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not Found: NOT_FOUND */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Conflict: CONFLICT, APPROVAL_REQUIRED, APPROVAL_PENDING */
            409: {
                headers: {
                    /** @description seconds to wait before retrying, sent when a call with the same Idempotency-Key is still running */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Request Entity Too Large: PAYLOAD_TOO_LARGE */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too Many Requests: RATE_LIMITED */
            429: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal Server Error: INTERNAL */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Bad Gateway: UPSTREAM */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service Unavailable: UNAVAILABLE */
            503: {
                headers: {
                    /** @description seconds to wait before retrying (always sent with RATE_LIMITED) */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
}
