// Credit points to one account and handle every outcome. Usage:
//   npx tsx allocate.ts http://127.0.0.1:3000 sk_… <questId> <address> <points> [orderId]
import { createQuestClient, QuestError } from '@quest/client';

const [baseUrl = 'http://127.0.0.1:3000', apiKey, questId, address = '', points, orderId] = process.argv.slice(2);
const quest = createQuestClient({ baseUrl, apiKey });

try {
  // Retries, the Idempotency-Key (your order id, else a generated one) and 202s are taken care of.
  const outcome = await quest.allocate({ questId: Number(questId), address, points: Number(points), idempotencyKey: orderId });
  if (outcome.kind === 'payout') {
    const { id, amount, account } = outcome.payout;
    console.log(`credited ${amount} points to ${account.pass}: ${id}${outcome.replayed ? ' (credited before)' : ''}`);
  } else {
    // The service decided not to (quest over or out of points, unknown account…): retrying changes nothing.
    console.log(`not credited: ${outcome.code} (${outcome.message})`);
  }
} catch (error) {
  if (!(error instanceof QuestError)) throw error;
  // Not decided: refused (wrong key, unknown quest, bad input), or the service stayed unavailable.
  const what = error.retryable ? `not decided yet, retry with key ${error.idempotencyKey}` : `refused: ${error.code}`;
  console.error(`${what}: ${error.message}`);
  process.exitCode = 1;
}
