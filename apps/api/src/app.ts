import Fastify, {
  type FastifyInstance,
  type FastifyPluginAsync,
  type FastifyReply,
  type FastifyRequest,
  LogController,
} from 'fastify';
import { serializerCompiler, validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import { answerUnknownExpectations, clientErrorHandler } from './client-errors.ts';
import { handleError, handleNotFound, sendError, mapError } from './errors.ts';
import { useDepthLimitedJsonParser } from './json-body.ts';
import { createLogger } from './logger.ts';
import { metricsPlugin } from './metrics.ts';
import { registerOpenApi } from './openapi/document.ts';
import { queueConsole } from './queue-console.ts';
import { CONSOLE_PATH, consolePlugin } from './console/plugin.ts';
import { registerRateLimits } from './rate-limits.ts';
import { requestIdFor } from './request-id.ts';
import { rootRoute } from './root.ts';
import { allocateRoute } from './routes/allocate.ts';
import { createBatchRoute } from './routes/create-batch.ts';
import { createReversalRoute } from './routes/create-reversal.ts';
import { getAllocationRoute } from './routes/get-allocation.ts';
import { getBatchRoute } from './routes/get-batch.ts';
import { getCampaignRoute } from './routes/get-campaign.ts';
import { getPayoutRoute } from './routes/get-payout.ts';
import { getQuestRoute } from './routes/get-quest.ts';
import { getQuestsRoute } from './routes/get-quests.ts';
import { getReversalRoute } from './routes/get-reversal.ts';
import { listPayoutsRoute } from './routes/list-payouts.ts';
import { healthRoutes } from './routes/health.ts';
import { createWebhookEndpointRoute } from './routes/create-webhook-endpoint.ts';
import { deleteWebhookEndpointRoute } from './routes/delete-webhook-endpoint.ts';
import { listEventsRoute } from './routes/list-events.ts';
import { listWebhookDeliveriesRoute } from './routes/list-webhook-deliveries.ts';
import { listWebhookEndpointsRoute } from './routes/list-webhook-endpoints.ts';
import { replayWebhookEndpointRoute } from './routes/replay-webhook-endpoint.ts';
import { rotateWebhookSecretRoute } from './routes/rotate-webhook-secret.ts';
import { CommandBoundary } from './commands/boundary.ts';
import { AllocationService } from './services/allocations.ts';
import { BatchService } from './services/batches.ts';
import { ReversalService } from './services/reversals.ts';
import { WebhookService } from './services/webhooks.ts';
import type { ApiConfig, ApiDeps, RouteDeps } from './types.ts';
import { QuestAuthorizer } from './auth.ts';
import { DomainError, ID_PARAM_MAX_LENGTH } from '@quest/domain';
import { parseSecretKey } from '@quest/config';

export type { ApiConfig, ApiDeps } from './types.ts';

/** The server's options: limits, timeouts, ids, logging, and errors answered in the envelope. */
function fastifyOptions(config: ApiConfig, given: ApiDeps) {
  return {
    loggerInstance: given.logger ?? createLogger(config.LOG_LEVEL),
    // Fastify's two lines per request are replaced by the onResponse hook's one.
    logController: new LogController({ disableRequestLogging: true }),
    genReqId: requestIdFor,
    bodyLimit: config.BODY_LIMIT_BYTES,
    // Ids are documented up to ID_PARAM_MAX_LENGTH characters: longer ones must reach the schema
    // (400 VALIDATION_FAILED), not stop at the router's default of 100.
    routerOptions: { maxParamLength: ID_PARAM_MAX_LENGTH },
    trustProxy: config.TRUST_PROXY,
    // While draining, finish requests on open connections normally instead of a bare 503.
    return503OnClosing: false,
    frameworkErrors: (error: unknown, request: FastifyRequest, reply: FastifyReply) => sendError(request, reply, mapError(error)),
    // Low-level answers (unparseable HTTP, headers too large, timeouts) in the envelope too.
    clientErrorHandler,
    // Node answers a missing Host with an empty 400 before Fastify sees the request; the onRequest
    // hook below answers it in the envelope instead.
    // Timeouts (Node checks them every connectionsCheckingInterval): a slow or idle client cannot
    // hold a connection for long, and HTTP_MAX_CONNECTIONS caps how many it can hold at all.
    http: {
      requireHostHeader: false,
      headersTimeout: Math.min(config.HTTP_HEADERS_TIMEOUT_MS, config.HTTP_REQUEST_TIMEOUT_MS),
      connectionsCheckingInterval: Math.min(1000, config.HTTP_HEADERS_TIMEOUT_MS),
    },
    requestTimeout: config.HTTP_REQUEST_TIMEOUT_MS,
    connectionTimeout: config.HTTP_CONNECTION_TIMEOUT_MS,
    keepAliveTimeout: config.HTTP_KEEP_ALIVE_TIMEOUT_MS,
  };
}

/** The request id on every answer, a missing Host refused, and one log line per request. */
function addRequestHooks(app: FastifyInstance): void {
  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
    if (request.raw.headers.host === undefined && request.raw.httpVersionMinor >= 1) {
      throw new DomainError('VALIDATION_FAILED', 'The Host header is required.');
    }
  });
  // The request's single log line (the logger is bound to its request id).
  app.addHook('onResponse', async (request, reply) => {
    request.log.info(
      {
        method: request.method,
        route: request.routeOptions.url ?? null,
        url: request.url,
        statusCode: reply.statusCode,
        responseTimeMs: Math.round(reply.elapsedTime * 100) / 100,
      },
      'request completed',
    );
  });
}

/** What the routes and the console are built from: the read services and the command boundary. */
function routeDeps(config: ApiConfig, given: ApiDeps, ownerItems: RouteDeps['ownerItems']): RouteDeps {
  const { sql, allocator, idempotency } = given;
  const commands = new CommandBoundary({
    sql,
    allocator,
    idempotency,
    flags: given.flags,
    ownerItems,
    webhooks: {
      secretKey: config.WEBHOOK_SECRET_KEY ? parseSecretKey(config.WEBHOOK_SECRET_KEY) : null,
      allowPrivateUrls: config.WEBHOOK_ALLOW_PRIVATE_URLS,
    },
    batches: { waitMs: config.BATCH_WAIT_MS, maxItems: config.BATCH_MAX_ITEMS },
  });
  const deps: RouteDeps = {
    ...given,
    config,
    auth: given.auth ?? QuestAuthorizer.uncached(sql),
    ownerItems,
    commands,
    allocations: new AllocationService(sql),
    batches: new BatchService(sql),
    reversals: new ReversalService(sql),
    webhooks: new WebhookService({ sql }),
  };
  return deps;
}

/** Every JSON route: one plugin per operation. */
const apiRoutes: FastifyPluginAsync<{ deps: RouteDeps }> = async (app, { deps }) => {
  await app.register(rootRoute);
  await app.register(healthRoutes, { deps });
  await app.register(getQuestsRoute, { deps });
  await app.register(getQuestRoute, { deps });
  await app.register(getCampaignRoute, { deps });
  await app.register(allocateRoute, { deps });
  await app.register(getAllocationRoute, { deps });
  await app.register(createBatchRoute, { deps });
  await app.register(getBatchRoute, { deps });
  await app.register(listPayoutsRoute, { deps });
  await app.register(getPayoutRoute, { deps });
  await app.register(createReversalRoute, { deps });
  await app.register(getReversalRoute, { deps });
  await app.register(listEventsRoute, { deps });
  await app.register(createWebhookEndpointRoute, { deps });
  await app.register(listWebhookEndpointsRoute, { deps });
  await app.register(deleteWebhookEndpointRoute, { deps });
  await app.register(rotateWebhookSecretRoute, { deps });
  await app.register(replayWebhookEndpointRoute, { deps });
  await app.register(listWebhookDeliveriesRoute, { deps });
};

/**
 * Build the HTTP app: zod validation and serialization, the OpenAPI document (generated from the
 * same schemas) at GET /openapi.json with interactive docs at /docs, the error envelope, request
 * ids, one log line per request, and every route. Listening is the caller's business.
 */
export async function buildApp(config: ApiConfig, given: ApiDeps): Promise<FastifyInstance> {
  const app = Fastify(fastifyOptions(config, given)).withTypeProvider<ZodTypeProvider>();
  answerUnknownExpectations(app.server);
  app.server.maxConnections = config.HTTP_MAX_CONNECTIONS;

  // Every body is JSON. Fastify also parses text/plain by default, which would turn a wrong content
  // type into a confusing parse error; without that parser it is 400 UNSUPPORTED_MEDIA_TYPE.
  app.removeContentTypeParser('text/plain');
  useDepthLimitedJsonParser(app);
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  app.setErrorHandler(handleError);
  app.setNotFoundHandler(handleNotFound);

  addRequestHooks(app as unknown as FastifyInstance);

  await registerOpenApi(app as unknown as FastifyInstance);

  await app.register(metricsPlugin, {
    sql: given.sql,
    redisUrl: config.REDIS_URL,
    prefix: config.QUEUE_PREFIX,
    partitions: config.QUEUE_PARTITIONS,
    dbPoolMax: config.DATABASE_POOL_MAX,
    sampleMs: config.METRICS_SAMPLE_MS,
  });
  const { ownerItems, authFailures } = await registerRateLimits(app, config, given.redis);
  if (config.ADMIN_TOKEN) {
    await app.register(queueConsole, {
      token: config.ADMIN_TOKEN,
      redisUrl: config.REDIS_URL,
      queuePrefix: config.QUEUE_PREFIX,
      partitions: config.QUEUE_PARTITIONS,
      allowActions: config.ADMIN_QUEUE_ACTIONS,
      authFailures,
    });
  }
  const deps = routeDeps(config, given, ownerItems);
  await app.register(apiRoutes, { deps });
  // The browser console: its own context (cookies, forms, HTML errors), nothing shared with the routes above.
  await app.register(consolePlugin, { prefix: CONSOLE_PATH, deps, authFailures });

  return app as unknown as FastifyInstance;
}
