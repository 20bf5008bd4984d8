import type { FastifyPluginAsync } from 'fastify';

/** POST /quests/:questId, the allocation status route and the batch routes (pipeline owner). */
export const allocationRoutes: FastifyPluginAsync = async () => {};
