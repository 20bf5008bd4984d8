import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import type { JobName, JobReply, ReplyAddress } from '@quest/domain';
import type { Redis } from 'ioredis';
import { redisConnection } from './connection.ts';
import { replyKey } from './names.ts';

/**
 * Result delivery, one reply stream per API process. A job carries the reply address of the
 * process that queued it (`reply`: the stream key and a token unique to the enqueue); the worker
 * that decides it appends the outcome there once the decision is committed; the API process reads
 * only its own stream, with one blocking XREAD on a connection of its own, and hands each reply to
 * whoever waits for that token. Redis work per decision is one append and one read, whatever the number of API processes
 * (a BullMQ QueueEvents per partition in every API process made every process read every
 * partition's events). Replies are advisory: a lost one (stream trimmed, deleted, expired, Redis
 * failed over) only means the waiter asks PostgreSQL, which holds the truth, before answering 202.
 *
 * Cluster-safe: every command touches one key (the stream), including the worker's script.
 */

/** A process id for reply keys: host, pid and a random tail (a restarted pid gets a new stream). */
export function newReplyProcessId(): string {
  return `${hostname()}-${process.pid}-${randomBytes(4).toString('hex')}`.replace(/[^A-Za-z0-9._-]/g, '_');
}

/** Entries a reply stream keeps at most (approximately): a reader lagging further loses replies, and falls back. */
export const REPLY_STREAM_MAXLEN = 10_000;

/** Append only while the stream exists (send-reply.lua). */
const SEND_SCRIPT = readFileSync(new URL('./send-reply.lua', import.meta.url), 'utf8');

type ReplyRedis = Redis & { questReply(key: string, maxLen: number, token: string, value: string): Promise<number> };

/** The worker's side: deliver a decided job's result to the process that queued it. */
export class ReplySender {
  private readonly redis: ReplyRedis;

  constructor(
    redis: Redis,
    private readonly prefix: string,
    private readonly maxLen = REPLY_STREAM_MAXLEN,
  ) {
    redis.defineCommand('questReply', { numberOfKeys: 1, lua: SEND_SCRIPT });
    this.redis = redis as ReplyRedis;
  }

  /** True when delivered, false when the stream is gone (its process stopped or Redis lost it). */
  async send(to: ReplyAddress, reply: JobReply<JobName>): Promise<boolean> {
    // Only this prefix's reply streams: a job's data cannot make a worker write anywhere else.
    if (!to.to.startsWith(`${this.prefix}:reply:{`)) return false;
    return (await this.redis.questReply(to.to, this.maxLen, to.token, JSON.stringify(reply))) === 1;
  }
}

export type ReplyWait = { kind: 'reply'; value: string } | { kind: 'timeout' } | { kind: 'lost' };

interface Waiter {
  resolve(w: ReplyWait): void;
  timer: NodeJS.Timeout;
}

export interface ReplyListenerOptions {
  redisUrl: string;
  prefix: string;
}

/** A reply stream expires this long after its process stopped refreshing it (the process died). */
const STREAM_TTL_MS = 60_000;
/** How often the stream's expiry is refreshed and its existence checked. */
const CHECK_EVERY_MS = 2000;
/** Replies nobody waits for (yet) are kept this long: a reply can arrive before queue.add returns. */
const UNCLAIMED_MS = 60_000;

/**
 * The API process's side: its reply stream and the waiters for its jobs. `wait(token)` resolves
 * with the reply, with `timeout`, or with `lost` when the stream vanished while waiting (its
 * reply may be gone: the caller checks the job or the database, and may wait again).
 */
export class ReplyListener {
  readonly key: string;
  readonly processId: string;
  private readonly reader: Redis;
  private readonly client: Redis;
  private readonly waiters = new Map<string, Waiter[]>();
  private readonly unclaimed = new Map<string, { value: string; at: number }>();
  private lastId = '0-0';
  private closed = false;
  private loop: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private checking = false;
  /** The stream was created once: a later re-creation means it was lost. */
  private started = false;
  /** Replies delivered to a waiter, and stream losses seen (for tests and metrics). */
  readonly stats = { replies: 0, unclaimed: 0, losses: 0 };
  private tokens = 0;

  constructor(opts: ReplyListenerOptions) {
    this.processId = newReplyProcessId();
    this.key = replyKey(opts.prefix, this.processId);
    // The blocking reader waits and reconnects forever; the other connection fails fast.
    this.reader = redisConnection(opts.redisUrl, { connectionName: `${opts.prefix}:reply-reader` });
    this.client = redisConnection(opts.redisUrl, {
      maxRetriesPerRequest: 1,
      enableOfflineQueue: false,
      commandTimeout: 1000,
    });
    this.reader.on('error', () => {});
    this.client.on('error', () => {});
    // After a reconnect the stream may be gone (a restarted Redis): check at once, not at the next tick.
    this.client.on('ready', () => void this.check());
    this.timer = setInterval(() => void this.check(), CHECK_EVERY_MS);
    this.timer.unref();
    this.loop = this.read();
  }

  /** Create the stream (with its expiry) if it is missing. Resolves false when Redis is unreachable. */
  async check(): Promise<boolean> {
    if (this.checking || this.closed || this.client.status !== 'ready') return false;
    this.checking = true;
    try {
      if ((await this.client.pexpire(this.key, STREAM_TTL_MS)) === 1) return true;
      // Missing: first start, or lost (expired while Redis was away, deleted, a failover or restart
      // without it). One key per command, so MULTI is fine on a cluster too.
      await this.client
        .multi()
        .xadd(this.key, 'MAXLEN', '~', String(REPLY_STREAM_MAXLEN), '*', 'hello', this.processId)
        .pexpire(this.key, STREAM_TTL_MS)
        .exec();
      if (this.started) {
        this.stats.losses++;
        // Read the new stream from its start; replies meanwhile were dropped: tell the waiters.
        this.lastId = '0-0';
        for (const [token, list] of [...this.waiters]) {
          this.waiters.delete(token);
          for (const w of list) {
            clearTimeout(w.timer);
            w.resolve({ kind: 'lost' });
          }
        }
      }
      this.started = true;
      return true;
    } catch {
      return false;
    } finally {
      this.checking = false;
    }
  }

  /** Resolves once the stream exists (or after `timeoutMs`, whichever is first). */
  async ready(timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (!this.closed && Date.now() < deadline) {
      if (await this.check()) return true;
      await new Promise((r) => setTimeout(r, 50));
    }
    return false;
  }

  private async read(): Promise<void> {
    while (!this.closed) {
      try {
        const res = (await this.reader.xread('COUNT', 1000, 'BLOCK', 5000, 'STREAMS', this.key, this.lastId)) as
          | [string, [string, string[]][]][]
          | null;
        if (!res) continue;
        for (const [, entries] of res) {
          for (const [id, fields] of entries) {
            this.lastId = id;
            if (fields[0] === 'j' && fields[2] === 'r') this.deliver(fields[1]!, fields[3]!);
          }
        }
      } catch {
        if (this.closed) return;
        await new Promise((r) => setTimeout(r, 200));
      }
    }
  }

  private deliver(token: string, value: string) {
    const list = this.waiters.get(token);
    if (list) {
      this.waiters.delete(token);
      this.stats.replies++;
      for (const w of list) {
        clearTimeout(w.timer);
        w.resolve({ kind: 'reply', value });
      }
      return;
    }
    // Nobody waits (yet): the add's answer may still be on its way, or the waiter gave up.
    this.stats.unclaimed++;
    const now = Date.now();
    this.unclaimed.set(token, { value, at: now });
    for (const [k, v] of this.unclaimed) {
      if (v.at > now - UNCLAIMED_MS && this.unclaimed.size <= 100_000) break;
      this.unclaimed.delete(k);
    }
  }

  /**
   * A reply token for one enqueue: unique within this process's stream (whose key is unique to the
   * process), so a reply can only ever reach the waiter it was meant for.
   */
  newToken(): string {
    return (this.tokens++).toString(36);
  }

  /** Wait up to `timeoutMs` for the reply carrying `token`. */
  wait(token: string, timeoutMs: number): Promise<ReplyWait> {
    const early = this.unclaimed.get(token);
    if (early) {
      this.unclaimed.delete(token);
      this.stats.replies++;
      return Promise.resolve({ kind: 'reply', value: early.value });
    }
    if (this.closed) return Promise.resolve({ kind: 'timeout' });
    return new Promise<ReplyWait>((resolve) => {
      const waiter: Waiter = {
        resolve,
        timer: setTimeout(
          () => {
            const list = this.waiters.get(token);
            const rest = list?.filter((w) => w !== waiter) ?? [];
            if (rest.length) this.waiters.set(token, rest);
            else this.waiters.delete(token);
            resolve({ kind: 'timeout' });
          },
          Math.max(1, timeoutMs),
        ),
      };
      const list = this.waiters.get(token);
      if (list) list.push(waiter);
      else this.waiters.set(token, [waiter]);
    });
  }

  /** Stop reading, answer the remaining waiters with `timeout`, and delete the stream. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.timer);
    for (const list of this.waiters.values())
      for (const w of list) {
        clearTimeout(w.timer);
        w.resolve({ kind: 'timeout' });
      }
    this.waiters.clear();
    await Promise.race([this.client.del(this.key).catch(() => {}), new Promise((r) => setTimeout(r, 1000).unref())]);
    this.reader.disconnect();
    this.client.disconnect();
    await this.loop;
  }
}
