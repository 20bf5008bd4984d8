export * from './servers.ts';
export * from './processes.ts';
export * from './openapi.ts';
export * from './seed.ts';
export * from './system.ts';
export * from './fixtures.ts';
export * from './metrics.ts';
export * from './redis-cluster.ts';
