import { jsonOrText } from './http.ts';

/**
 * The restore drill's clients: keyed credits that retry a 5xx or a dropped connection with the same
 * Idempotency-Key and follow a 202 to its outcome, remembering when each was acknowledged and with
 * which payout, so a restore can be checked against what clients were told.
 */

export interface KeyedOp {
  key: string;
  questId: number;
  body: { points: number; address: string };
  /** The payout the client was told about (a 200, or its 202 followed to completed). */
  payoutId?: string;
  outcome?: 'completed' | 'rejected' | 'gave-up';
  /** When the client was told (ms since epoch). */
  okAt?: number;
}

/** The parts of the API's answers the clients read. */
interface Answer {
  payout?: { id: string };
  allocation?: { status: string; payout?: { id: string } };
}

async function call(
  url: string,
  init: RequestInit = {},
): Promise<{ status: number | 'error'; body: Answer; location?: string | null }> {
  try {
    const res = await fetch(url, { ...init, signal: AbortSignal.timeout(10_000) });
    return { status: res.status, body: jsonOrText(await res.text()) as Answer, location: res.headers.get('location') };
  } catch {
    return { status: 'error', body: {} };
  }
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Send `op` (again) until it is decided; returns the payout id a 200 or a followed 202 names. */
export async function sendKeyed(baseUrl: string, apiKey: string, op: KeyedOp, timeoutMs = 60_000): Promise<void> {
  const headers = { 'content-type': 'application/json', 'x-api-key': apiKey };
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const res = await call(`${baseUrl}/quests/${op.questId}`, {
      method: 'POST',
      headers: { ...headers, 'idempotency-key': op.key },
      body: JSON.stringify(op.body),
    });
    if (res.status === 200) {
      op.payoutId = res.body.payout!.id;
      op.outcome = 'completed';
      op.okAt = Date.now();
      return;
    }
    if (res.status === 202) {
      while (Date.now() < deadline) {
        const s = await call(`${baseUrl}${res.location}`, { headers });
        const status = s.status === 200 ? s.body.allocation?.status : undefined;
        if (status === 'completed') {
          op.payoutId = s.body.allocation!.payout!.id;
          op.outcome = 'completed';
          op.okAt = Date.now();
          return;
        }
        if (status === 'rejected') return void (op.outcome = 'rejected');
        if (status === 'failed') break;
        await pause(100);
      }
      continue;
    }
    if (res.status !== 'error' && res.status < 500)
      throw new Error(`unexpected answer ${res.status} ${JSON.stringify(res.body)}`);
    await pause(100);
  }
  op.outcome = 'gave-up';
}

/** Clients sending new keyed credits in a loop until `stop()`; `ops` grows as they go. */
export class KeyedLoad {
  readonly ops: KeyedOp[] = [];
  #stopped = false;
  #running: Promise<void> | undefined;

  constructor(
    private readonly target: { baseUrl: () => string; apiKey: string; questIds: number[]; accounts: string[] },
    private readonly tag: string,
  ) {}

  start(clients: number): void {
    this.#stopped = false;
    const client = async (c: number) => {
      for (let n = 0; !this.#stopped; n++) {
        const op: KeyedOp = {
          key: `${this.tag}-c${c}-n${n}`,
          questId: this.target.questIds[(c + n) % this.target.questIds.length]!,
          body: { points: 1 + (n % 3), address: this.target.accounts[(c + n) % this.target.accounts.length]! },
        };
        this.ops.push(op);
        await sendKeyed(this.target.baseUrl(), this.target.apiKey, op);
      }
    };
    this.#running = Promise.all(Array.from({ length: clients }, (_, c) => client(c))).then(() => {});
  }

  /** Completed ops acknowledged after `since` (ms since epoch). */
  ackedSince(since: number): number {
    return this.ops.filter((o) => o.okAt !== undefined && o.okAt > since).length;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    await this.#running;
  }
}
