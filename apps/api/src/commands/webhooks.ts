import { deleteEndpoint, getEndpoint, insertEndpoint, replayEvents, rotateEndpointSecret, type Sql } from '@quest/db';
import { checkWebhookUrl, DomainError, encryptSecret, newId, newWebhookSecret } from '@quest/domain';
import { endpointToView } from '../schemas/events.ts';
import { success } from './answer.ts';
import type { Command } from './command.ts';
import { createEndpointInput, endpointInput, replayInput } from './inputs.ts';

/** How long a rotated-out secret keeps signing beside the new one. */
export const PREVIOUS_SECRET_TTL_MS = 24 * 3_600_000;

export interface WebhookCommandDeps {
  sql: Sql;
  /** WEBHOOK_SECRET_KEY: endpoints' secrets are encrypted with it; without it none can be created or rotated. */
  secretKey: Buffer | null;
  allowPrivateUrls: boolean;
}

type EndpointBody = { endpoint: ReturnType<typeof endpointToView> };

/**
 * An owner's webhook settings. No feature switch governs them (the `quests` switch stops crediting,
 * not an owner's own settings), and they are not charged to the owner's item budget: the per-key
 * request limit covers them like every keyed request.
 */
const OWNER_SETTING = { flag: null, quest: () => null, cost: () => 0 } as const;

export function webhookCommands(deps: WebhookCommandDeps) {
  const key = (): Buffer => {
    if (!deps.secretKey) throw new DomainError('WEBHOOKS_NOT_CONFIGURED');
    return deps.secretKey;
  };

  /** A new endpoint; its secret is shown in this answer only, and stored encrypted. */
  const createEndpoint: Command<typeof createEndpointInput, EndpointBody> = {
    ...OWNER_SETTING,
    input: createEndpointInput,
    async run({ ownerId }, body) {
      const secretKey = key();
      const check = checkWebhookUrl(body.url, { allowPrivate: deps.allowPrivateUrls });
      if (!check.ok) throw new DomainError('WEBHOOK_URL_NOT_ALLOWED', `The webhook URL is not allowed: it ${check.reason}.`);
      const id = newId('whe');
      const secret = newWebhookSecret();
      const row = await insertEndpoint(deps.sql, {
        id,
        ownerId,
        url: check.url.toString(),
        description: body.description ?? '',
        eventTypes: body.events ? [...new Set(body.events)] : null,
        secretEnc: encryptSecret(secret, secretKey, id),
      });
      return success(200, { endpoint: endpointToView(row, secret) });
    },
  };

  const deleteEndpointCommand: Command<typeof endpointInput, EndpointBody> = {
    ...OWNER_SETTING,
    input: endpointInput,
    async run({ ownerId }, { id }) {
      const row = await deleteEndpoint(deps.sql, id, ownerId);
      if (!row) throw new DomainError('WEBHOOK_ENDPOINT_NOT_FOUND');
      return success(200, { endpoint: endpointToView(row) });
    },
  };

  /** A new secret; the previous one keeps signing beside it for PREVIOUS_SECRET_TTL_MS. */
  const rotateSecret: Command<typeof endpointInput, EndpointBody> = {
    ...OWNER_SETTING,
    input: endpointInput,
    async run({ ownerId }, { id }) {
      const secret = newWebhookSecret();
      const previousUntil = new Date(Date.now() + PREVIOUS_SECRET_TTL_MS);
      const row = await rotateEndpointSecret(deps.sql, {
        id,
        ownerId,
        secretEnc: encryptSecret(secret, key(), id),
        previousUntil,
      });
      if (!row) throw new DomainError('WEBHOOK_ENDPOINT_NOT_FOUND');
      return success(200, { endpoint: endpointToView(row, secret) });
    },
  };

  const replayEventsCommand: Command<typeof replayInput, { deliveries: number }> = {
    ...OWNER_SETTING,
    input: replayInput,
    async run({ ownerId }, { id, since }) {
      if (!(await getEndpoint(deps.sql, id, ownerId))) throw new DomainError('WEBHOOK_ENDPOINT_NOT_FOUND');
      return success(200, { deliveries: await replayEvents(deps.sql, id, new Date(since)) });
    },
  };

  return { createEndpoint, deleteEndpoint: deleteEndpointCommand, rotateSecret, replayEvents: replayEventsCommand };
}
