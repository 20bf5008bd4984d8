/**
 * The base URL the examples below are written with; GET /openapi.json (and so the /docs page)
 * answers with the address the request reached instead (registerOpenApi).
 */
export const EXAMPLE_BASE = 'http://127.0.0.1:3000';

/** info.description: what a newcomer needs first (rendered as Markdown by /docs). */
export const API_DESCRIPTION = `Read quests and campaigns, and credit quest points to pass-address accounts — one at a time, or in batches — never lost, never doubled, never over a quest's budget.

## Getting an API key

The owner routes need the quest owner's API key in the \`x-api-key\` header. Keys are issued by the operator CLI on the server (it reads \`DATABASE_URL\`):

\`\`\`sh
npx quest-admin owner create --name "Acme Games" --pass 0x52908400098527886E0F7030069857D2E4169EE7
# → owner own_… and its first key sk_… (shown only this once)
npx quest-admin key create --owner own_01jf8q4g0x7m3r6v2k9d1n5bta   # another key for that owner
npx quest-admin demo                                                 # or: demo owner, key, quests, accounts and curl lines
\`\`\`

Quests belong to an owner (\`quest-admin quest create --owner own_… …\`); a key works on its owner's quests only. Press **Authorize** above to try the routes from this page.

## Examples

\`\`\`sh
BASE=${EXAMPLE_BASE} KEY=sk_…
curl -sS "$BASE/quests?limit=20"                                  # public quests
curl -sS "$BASE/campaigns/1"                                      # a campaign with its public quests
curl -sS "$BASE/quests/1?limit=20&offset=0" -H "x-api-key: $KEY"  # a quest and its payouts (owner)
curl -sS -X POST "$BASE/quests/1" -H "x-api-key: $KEY" -H 'content-type: application/json' \\
  -H 'Idempotency-Key: order-1234' -d '{"points":10,"address":"0x52908400098527886E0F7030069857D2E4169EE7"}'
curl -sS "$BASE/quests/1/allocations/alc_…" -H "x-api-key: $KEY"   # the status URL of a 202 (Location)
curl -sS -X POST "$BASE/quests/1/batches" -H "x-api-key: $KEY" -H 'content-type: application/json' \\
  -H 'Idempotency-Key: import-2026-03-01' -d '{"allocations":[{"address":"0x52908400098527886E0F7030069857D2E4169EE7","points":5}]}'
curl -sS "$BASE/quests/1/batches/bat_…?limit=100&offset=0" -H "x-api-key: $KEY"
curl -sS -X POST "$BASE/quests/1/payouts/pay_…/reversals" -H "x-api-key: $KEY" -H 'content-type: application/json' \\
  -H 'Idempotency-Key: refund-1234' -d '{"points":10,"reason":"credited twice"}'   # take back 10 points of a payout (body {}: all of it)
curl -sS "$BASE/quests/1/reversals/rev_…" -H "x-api-key: $KEY"     # the status URL of a reversal's 202
curl -sS "$BASE/quests/1/payouts/pay_…" -H "x-api-key: $KEY"       # a payout with its reversals
curl -sS "$BASE/quests/1/payouts?address=0x…" -H "x-api-key: $KEY" # an account's payouts on the quest
curl -sS "$BASE/healthz"; curl -sS "$BASE/readyz"
\`\`\`

## Answers

- **200** is a decided outcome; **202** means accepted and queued but not decided yet: poll the \`Location\` header's URL.
- Every non-2xx answer is the \`ErrorResponse\` envelope; its \`code\` is one of \`ErrorCode\`. Every answer carries an \`x-request-id\` header.
- **Idempotency**: send an \`Idempotency-Key\` with a POST and retry with the same key and body as often as needed — the same owner + quest + key always gets the original outcome, never a second credit. An answer that replays an earlier outcome carries \`Idempotent-Replayed: true\`.
- **Reversals** take points back from a payout, decided in the quest's order with its allocations: the quest's \`points_remaining\` goes up by the amount, the account's balance down. A payout is never reversed by more than its amount in total.
- 503 answers (\`DATABASE_UNAVAILABLE\`, \`QUEUE_UNAVAILABLE\`, \`ALLOCATION_FAILED\`, \`REVERSAL_FAILED\`) applied nothing: retry after \`Retry-After\` seconds, with the same Idempotency-Key.`;
