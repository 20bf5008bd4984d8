import { recoveryPoint, unaccountedBatches, unaccountedKeys, unaccountedRequests } from '@quest/db/restore';
import { describeUrl } from '@quest/config/urls';
import { type CommandOutput, type Context, EXIT } from '../context.ts';
import { plural, renderFields } from '../format.ts';
import { connect, fenceQueue, openRedis, readRememberedWork } from './queue.ts';

/**
 * `quest-admin restore prepare`: run once on a restored database before any API or worker process
 * starts. PostgreSQL is the truth; what Redis remembers beyond it was rewound by the restore. The
 * report says where the ledger stops and which requests it cannot account for; the fence deletes
 * the old queue so that no job decided against the lost ledger runs against the restored one, and
 * the reconciler re-drives what the database says is pending. Idempotency-Key claims stay: a client
 * retrying a rewound request with the same key and body has it decided again, once; a different
 * body with that key is still refused.
 */
export async function prepareRestore(ctx: Context, opts: { dryRun: boolean; list: number }): Promise<CommandOutput> {
  const { REDIS_URL, QUEUE_PREFIX, QUEUE_PARTITIONS } = ctx.config;
  const sql = await ctx.db();
  const point = await recoveryPoint(sql);
  const redis = openRedis(REDIS_URL);
  try {
    await connect(redis, describeUrl(REDIS_URL, 'the configured Redis'));
    const work = await readRememberedWork(redis, QUEUE_PREFIX, QUEUE_PARTITIONS);
    const [items, batches, claims] = await Promise.all([
      unaccountedRequests(sql, work.items),
      unaccountedBatches(sql, work.batchIds),
      unaccountedKeys(sql, work.claimedKeys),
    ]);
    const rewound = [...new Set([...items.map((i) => i.key), ...batches, ...claims])].sort();
    const blocked = point.inRecovery
      ? 'the database is still in recovery: promote it first'
      : work.liveWorkers > 0
        ? `${plural(work.liveWorkers, 'worker')} of prefix "${QUEUE_PREFIX}" still live: stop every API and worker process first`
        : undefined;
    const refused = opts.dryRun ? undefined : blocked;
    const fenced = opts.dryRun || refused ? null : await fenceQueue(redis, QUEUE_PREFIX);
    const json = {
      recoveryPoint: {
        timeline: point.timeline,
        recoveryTarget: point.recoveryTarget,
        lastDecisionAt: point.lastDecisionAt?.toISOString() ?? null,
      },
      ledger: point.counts,
      redis: { jobItems: work.items.length, batchJobs: work.batchIds.length, idempotencyClaims: work.claimedKeys.length },
      rewound: { count: rewound.length, keys: rewound.slice(0, opts.list) },
      fence:
        fenced === null
          ? { done: false, reason: refused ?? `dry run${blocked ? ` (and ${blocked})` : ''}` }
          : { done: true, keysDeleted: fenced },
    };
    return { json, text: render(json, QUEUE_PREFIX), ...(refused ? { exitCode: EXIT.failed } : {}) };
  } finally {
    redis.disconnect();
  }
}

type Report = {
  recoveryPoint: { timeline: number; recoveryTarget: string | null; lastDecisionAt: string | null };
  ledger: { payouts: number; pendingRequests: number; unfinishedBatches: number };
  redis: { jobItems: number; batchJobs: number; idempotencyClaims: number };
  rewound: { count: number; keys: string[] };
  fence: { done: boolean; reason?: string; keysDeleted?: number };
};

function render(r: Report, prefix: string): string {
  const lines = [
    renderFields('recovery point', [
      ['timeline', r.recoveryPoint.timeline],
      [
        'recovery target',
        r.recoveryPoint.recoveryTarget ?? (r.recoveryPoint.timeline === 1 ? 'never restored to a point' : 'unknown'),
      ],
      ['last decision', r.recoveryPoint.lastDecisionAt ?? 'none'],
      ['payouts', r.ledger.payouts],
      ['pending requests (re-driven by the reconciler)', r.ledger.pendingRequests],
      ['unfinished batches (re-driven by the reconciler)', r.ledger.unfinishedBatches],
    ]),
    '',
    renderFields(`Redis (prefix "${prefix}")`, [
      ['request items in jobs', r.redis.jobItems],
      ['batch jobs', r.redis.batchJobs],
      ['Idempotency-Key claims', r.redis.idempotencyClaims],
    ]),
    '',
    `Rewound: ${plural(r.rewound.count, 'request')} Redis knows of that the restored ledger has no trace of` +
      (r.rewound.count ? ' (a client retrying one with its Idempotency-Key has it decided again, once):' : '.'),
    ...r.rewound.keys.map((k) => `  ${k}`),
    ...(r.rewound.count > r.rewound.keys.length ? [`  … and ${r.rewound.count - r.rewound.keys.length} more (--list N)`] : []),
    '',
    r.fence.done
      ? `Fenced: ${plural(r.fence.keysDeleted!, 'key')} of the old queue deleted (Idempotency-Key claims kept). Start the service now.`
      : `Not fenced: ${r.fence.reason}.`,
  ];
  return lines.join('\n');
}
