import { type Command, InvalidArgumentError } from 'commander';
import {
  DEFAULT_LIST_LIMIT,
  parseDeliveryStatus,
  parseEndpointId,
  parseLimit,
  parseFeatureAssignments,
  parseInstant,
  parseOwnerId,
} from '../args.ts';
import { MAX_LIST_LIMIT } from '@quest/db/lists';
import { FEATURES } from '@quest/db/flags';
import { usageError } from '../usage.ts';
import type { Context } from '../context.ts';
import type { Run } from './run.ts';

/** `features`, `audit` and `demo`: switches, the ledger's check, and a demo to try the API. */
export function registerOperationCommands(program: Command, ctx: Context, run: Run): void {
  const features = program.command('features').description('Show (default) or switch the quests and campaigns features');
  features
    .command('show', { isDefault: true })
    .description('Show both feature flags')
    .action(() => run(async () => (await import('../commands/features.ts')).featuresShow(ctx)));
  features
    .command('set')
    .description('Switch features on or off, e.g. "features set quests=off campaigns=on"')
    .argument('<assignments...>', `${FEATURES.map((f) => `${f}=on|off`).join(' and/or ')}`)
    .action((assignments: string[], _opts, cmd: Command) => {
      let changes: ReturnType<typeof parseFeatureAssignments<(typeof FEATURES)[number]>>;
      try {
        changes = parseFeatureAssignments(assignments, FEATURES);
      } catch (error) {
        if (error instanceof InvalidArgumentError) usageError(cmd, error.message);
        throw error;
      }
      return run(async () => (await import('../commands/features.ts')).featuresSet(ctx, changes));
    });

  program
    .command('audit')
    .description(
      'Check the ledger: per quest total = remaining + paid out - reversed, per account balance = paid in - reversed, no payout reversed beyond its amount, nothing negative; exit 1 on any violation',
    )
    .action(() => run(async () => (await import('../commands/audit.ts')).auditCommand(ctx)));

  program
    .command('demo')
    .description('Create a demo owner, key, campaign, two quests and three accounts, and print curl commands to try the API')
    .option('--env', 'print only shell `export` lines of the values, for: eval "$(npx quest-admin demo --env)"')
    .action((opts: { env?: boolean }, cmd: Command) => {
      if (opts.env && ctx.json) usageError(cmd, '--env prints shell lines; it cannot be combined with --json');
      return run(async () => (await import('../commands/demo.ts')).demo(ctx, opts));
    });
}

/** `webhooks` and `status`: owners' endpoints and the pool's work, as an operator sees them. */
export function registerServiceCommands(program: Command, ctx: Context, run: Run): void {
  const webhooks = program.command('webhooks').description("Owners' webhook endpoints: list, delivery logs, replays");
  webhooks
    .command('list')
    .description('List webhook endpoints (not deleted): owner, URL, events, status (failing: deliveries were given up)')
    .option('--owner <ownerId>', "only this owner's endpoints", parseOwnerId)
    .action((opts) => run(async () => (await import('../commands/webhooks.ts')).webhookList(ctx, opts)));
  webhooks
    .command('deliveries')
    .description("An endpoint's delivery log, newest first: status, attempts, next attempt, last HTTP status, latency, error")
    .requiredOption('--endpoint <id>', 'webhook endpoint id (whe_…)', parseEndpointId)
    .option('--status <status>', 'only pending, delivered or failed deliveries', parseDeliveryStatus)
    .option('--limit <n>', `deliveries to show, 1-${MAX_LIST_LIMIT}`, parseLimit, DEFAULT_LIST_LIMIT)
    .action((opts) => run(async () => (await import('../commands/webhooks.ts')).webhookDeliveries(ctx, opts)));
  webhooks
    .command('replay')
    .description('Deliver again to an endpoint every event it subscribes to created since a time (kept EVENT_RETENTION_DAYS)')
    .requiredOption('--endpoint <id>', 'webhook endpoint id (whe_…)', parseEndpointId)
    .requiredOption('--since <time>', 'ISO 8601 date or date-time, e.g. 2026-03-01T00:00:00Z', parseInstant)
    .action((opts) => run(async () => (await import('../commands/webhooks.ts')).webhookReplay(ctx, opts)));
  webhooks
    .command('local')
    .description(
      'Set up webhooks on this machine: append a new WEBHOOK_SECRET_KEY and WEBHOOK_ALLOW_PRIVATE_URLS=true to .env (settings already given are kept); then restart the API and the worker',
    )
    .action(() => run(async () => (await import('../commands/webhooks.ts')).webhookLocal(ctx)));

  program
    .command('status')
    .description(
      'The worker pool and its work: live members and the partitions each owns, per-partition waiting/active jobs and oldest wait, pending 202s and unfinished batches in PostgreSQL, the last reconciler run',
    )
    .action(() => run(async () => (await import('../commands/status.ts')).statusCommand(ctx)));
}
