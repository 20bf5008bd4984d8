/** What the load's clients did: each request (an op) with every attempt and its answer, for the invariants. */

export type Answer = number | 'error';

export interface Attempt {
  sentAt: number;
  at: number;
  status: Answer;
}

export interface Op {
  kind: 'alloc' | 'batch' | 'reversal';
  client: number;
  questId: number;
  /** Undefined for a client that sends no Idempotency-Key (and so never retries a POST). */
  idemKey: string | undefined;
  /** The allocation id / batch id / reversal id: derived from the Idempotency-Key, or a keyless request's 202 id (else ''). */
  requestKey: string;
  /** Allocations: what each item credits. Reversals: none. */
  items: { address: string; points: number }[];
  /** Reversals: the payout reversed, its amount, and the points asked for (undefined: the whole payout). */
  reversal?: { payoutId: string; payoutAmount: number; points: number | undefined; reversalId?: string; amount?: number };
  firstSentAt: number;
  attempts: Attempt[];
  got202: boolean;
  /** When the client learnt the outcome (a 200/400, or the 202's status URL saying decided). */
  ackAt?: number;
  /** When a 202 was first received, and when its status URL first said decided. */
  first202At?: number;
  /** `abandoned`: a keyless request got a 5xx or no answer; not retried, since a retry could credit twice. */
  outcome?: 'completed' | 'rejected' | 'unanswered' | 'unresolved' | 'unexpected' | 'abandoned';
  detail?: string;
  /** Every payout id the service reported for this request (a single request must only ever see one). */
  payoutIds: Set<string>;
  /** Batches: payout id reported per item index, and indexes reported rejected. */
  itemPayouts?: Map<number, string>;
  itemRejected?: Set<number>;
  rejectCode?: string;
}

export interface LoadTarget {
  /** Read at each attempt: a restarted API may come back elsewhere (it does not here; same port). */
  baseUrl: () => string;
  apiKey: string;
  ownerId: string;
  questIds: number[];
  accounts: string[];
}

export interface LoadOptions {
  clients: number;
  /** One op in `batchEvery` is a batch of `batchSize` items. */
  batchEvery: number;
  batchSize: number;
  /** One op in `unknownEvery` credits an address with no account (a business rejection). */
  unknownEvery: number;
  /** One single allocation in `keylessEvery` is sent without an Idempotency-Key. */
  keylessEvery: number;
  /** Per-HTTP-call timeout; a frozen API must not freeze a client. */
  httpTimeoutMs: number;
  tag: string;
  /** One op in `reverseEvery` reverses an earlier answered payout (0 or absent: none). */
  reverseEvery?: number;
}

/** Count the answers of every attempt by class. */
export function answerCounts(ops: Op[]) {
  const c = {
    requests: ops.length,
    reversals: ops.filter((o) => o.kind === 'reversal').length,
    s200: 0,
    s202: 0,
    s4xx: 0,
    s5xx: 0,
    errors: 0,
  };
  for (const op of ops) {
    for (const a of op.attempts) {
      if (a.status === 'error') c.errors++;
      else if (a.status === 200) c.s200++;
      else if (a.status === 202) c.s202++;
      else if (a.status >= 500) c.s5xx++;
      else if (a.status >= 400) c.s4xx++;
    }
  }
  return c;
}
